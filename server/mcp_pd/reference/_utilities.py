"""Offline utility tools: safe arithmetic, unit conversion, text statistics and hashing.

`calculate` walks the expression's syntax tree itself (never `eval`), allows only numbers, arithmetic
operators and a short list of math functions, and refuses work whose result would be enormous.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import math
import operator
import re
from collections import Counter
from collections.abc import Callable
from typing import Annotated, Any, Final, Literal

import mcp_types as types
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

__all__ = [
    "CalculationResult",
    "ConversionResult",
    "HashResult",
    "TextStats",
    "calculate_expression",
    "convert",
    "hash_digest",
    "register_utility_tools",
    "text_statistics",
]

MAX_EXPRESSION_LENGTH: Final = 500
MAX_EXPONENT: Final = 10_000
MAX_INT_BITS: Final = 10_000  # about 3000 decimal digits, well inside int-to-str limits
MAX_NODES: Final = 400

Number = int | float

_BINARY: Final[dict[type[ast.operator], Callable[[Any, Any], Any]]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: Final[dict[type[ast.unaryop], Callable[[Any], Any]]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_CONSTANTS: Final[dict[str, float]] = {"pi": math.pi, "e": math.e, "tau": math.tau}
# name -> (function, minimum arguments, maximum arguments)
_FUNCTIONS: Final[dict[str, tuple[Callable[..., Any], int, int]]] = {
    "abs": (abs, 1, 1),
    "round": (round, 1, 2),
    "min": (min, 2, 50),
    "max": (max, 2, 50),
    "sqrt": (math.sqrt, 1, 1),
    "exp": (math.exp, 1, 1),
    "log": (math.log, 1, 2),
    "log10": (math.log10, 1, 1),
    "log2": (math.log2, 1, 1),
    "floor": (math.floor, 1, 1),
    "ceil": (math.ceil, 1, 1),
    "sin": (math.sin, 1, 1),
    "cos": (math.cos, 1, 1),
    "tan": (math.tan, 1, 1),
    "radians": (math.radians, 1, 1),
    "degrees": (math.degrees, 1, 1),
}
_ALLOWED = "numbers, + - * / // % **, parentheses, the constants pi, e and tau, and the functions " + ", ".join(
    _FUNCTIONS
)
_OPERATOR_HINTS: Final[dict[type[ast.AST], str]] = {
    ast.BitXor: "'^' is not a power operator here; write powers as a ** b",
    ast.BitAnd: "bitwise '&' is not supported",
    ast.BitOr: "bitwise '|' is not supported",
    ast.LShift: "shifts are not supported; write a * 2 ** n instead of a << n",
    ast.RShift: "shifts are not supported; write a // 2 ** n instead of a >> n",
    ast.MatMult: "'@' is not supported",
}


class CalculationResult(BaseModel):
    """The value of an arithmetic expression."""

    expression: str = Field(description="The expression as evaluated.")
    result: int | float = Field(description="The exact integer result, or a float.")
    result_type: Literal["integer", "float"]


def _shown(source: str, limit: int = 80) -> str:
    """The expression quoted for an error message, shortened if long."""
    return repr(source if len(source) <= limit else source[: limit - 1] + "…")


class _Evaluator:
    """Evaluates a parsed expression tree, allowing only arithmetic on numbers."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, message: str) -> ToolError:
        return ToolError(f"Cannot evaluate {_shown(self.source)}: {message}.")

    def visit(self, node: ast.AST) -> Number:
        if isinstance(node, ast.Expression):
            return self.visit(node.body)
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, int | float):
                raise self.fail(f"{node.value!r} is not a number; only {_ALLOWED} are allowed")
            return node.value
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            return self.checked(_UNARY[type(node.op)](self.visit(node.operand)))
        if isinstance(node, ast.BinOp):
            if type(node.op) not in _BINARY:
                hint = _OPERATOR_HINTS.get(type(node.op), "that operator is not supported")
                raise self.fail(hint)
            return self.binary(node.op, self.visit(node.left), self.visit(node.right))
        if isinstance(node, ast.Name):
            if node.id in _CONSTANTS:
                return _CONSTANTS[node.id]
            raise self.fail(f"unknown name {node.id!r}; only {_ALLOWED} are allowed")
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.Attribute):
            raise self.fail("attribute access (a.b) is not allowed")
        if isinstance(node, ast.Compare | ast.BoolOp):
            raise self.fail("comparisons and boolean logic are not supported")
        raise self.fail(f"{type(node).__name__} expressions are not allowed; only {_ALLOWED} are allowed")

    def call(self, node: ast.Call) -> Number:
        if not isinstance(node.func, ast.Name):
            raise self.fail("this call is not allowed; only the functions " + ", ".join(_FUNCTIONS) + " can be called")
        name = node.func.id
        if name not in _FUNCTIONS:
            raise self.fail(f"function {name!r} is not allowed; available functions: " + ", ".join(_FUNCTIONS))
        function, least, most = _FUNCTIONS[name]
        if node.keywords or any(isinstance(arg, ast.Starred) for arg in node.args):
            raise self.fail(f"{name}() takes positional arguments only")
        if not least <= len(node.args) <= most:
            expected = f"{least} argument" if least == most == 1 else f"{least} to {most} arguments"
            raise self.fail(f"{name}() takes {expected}, got {len(node.args)}")
        args = [self.visit(arg) for arg in node.args]
        if name == "round" and len(args) == 2 and (not isinstance(args[1], int) or abs(args[1]) > 100):
            raise self.fail("round()'s second argument must be an integer between -100 and 100")
        try:
            value: Number = function(*args)
        except ValueError as exc:
            raise self.fail(f"{name}() is undefined for these arguments ({exc})") from None
        except OverflowError:
            raise self.fail(f"the result of {name}() is too large to represent") from None
        return self.checked(value)

    def binary(self, op: ast.operator, left: Number, right: Number) -> Number:
        if isinstance(op, ast.Pow):
            if abs(right) > MAX_EXPONENT:
                raise self.fail(f"exponent {right} is too large; exponents are limited to ±{MAX_EXPONENT}")
            if (
                isinstance(left, int)
                and isinstance(right, int)
                and abs(left) > 1
                and math.log2(abs(left)) * right > MAX_INT_BITS + 1
            ):
                raise self.fail(f"the result would exceed {MAX_INT_BITS} bits (about 3000 digits)")
        if (
            isinstance(op, ast.Mult)
            and isinstance(left, int)
            and isinstance(right, int)
            and left.bit_length() + right.bit_length() > MAX_INT_BITS + 1
        ):
            raise self.fail(f"the result would exceed {MAX_INT_BITS} bits (about 3000 digits)")
        try:
            value: Number = _BINARY[type(op)](left, right)
        except ZeroDivisionError:
            raise self.fail("division by zero") from None
        except OverflowError:
            raise self.fail("the result is too large to represent") from None
        if isinstance(value, complex):
            raise self.fail("the result is a complex number (e.g. a fractional power of a negative number)")
        return self.checked(value)

    def checked(self, value: Number) -> Number:
        if isinstance(value, float) and not math.isfinite(value):
            raise self.fail("the result is not a finite number")
        if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
            raise self.fail(f"the result would exceed {MAX_INT_BITS} bits (about 3000 digits)")
        return value


def calculate_expression(expression: str) -> CalculationResult:
    """Evaluate an arithmetic expression safely; raises ToolError explaining what is wrong with it."""
    source = expression.strip()
    if not source:
        raise ToolError("The expression is empty; pass something like '2 * (3 + 4)'.")
    if len(source) > MAX_EXPRESSION_LENGTH:
        raise ToolError(f"The expression is {len(source)} characters long; the limit is {MAX_EXPRESSION_LENGTH}.")
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as exc:
        raise ToolError(f"Cannot parse {_shown(source)}: {exc.msg}. Use {_ALLOWED}.") from None
    except (RecursionError, MemoryError):
        raise ToolError(f"Cannot parse {_shown(source)}: it is nested too deeply.") from None
    if sum(1 for _ in ast.walk(tree)) > MAX_NODES:
        raise ToolError(f"The expression has too many parts; the limit is {MAX_NODES} syntax nodes.")
    try:
        value = _Evaluator(source).visit(tree)
    except RecursionError:
        raise ToolError(f"Cannot evaluate {_shown(source)}: it is nested too deeply.") from None
    return CalculationResult(
        expression=source, result=value, result_type="integer" if isinstance(value, int) else "float"
    )


# -- units -----------------------------------------------------------------------------------------

Unit = Literal[
    "mm", "cm", "m", "km", "in", "ft", "yd", "mi", "nmi",
    "mg", "g", "kg", "t", "oz", "lb", "st",
    "C", "F", "K",
    "ms", "s", "min", "h", "d", "wk",
    "bit", "B", "kB", "MB", "GB", "TB", "KiB", "MiB", "GiB", "TiB",
]  # fmt: skip
Dimension = Literal["length", "mass", "temperature", "time", "data"]
# unit -> (dimension, size in the dimension's base unit); temperature is handled separately.
_UNITS: Final[dict[str, tuple[Dimension, float]]] = {
    "mm": ("length", 0.001),
    "cm": ("length", 0.01),
    "m": ("length", 1.0),
    "km": ("length", 1000.0),
    "in": ("length", 0.0254),
    "ft": ("length", 0.3048),
    "yd": ("length", 0.9144),
    "mi": ("length", 1609.344),
    "nmi": ("length", 1852.0),
    "mg": ("mass", 1e-6),
    "g": ("mass", 0.001),
    "kg": ("mass", 1.0),
    "t": ("mass", 1000.0),
    "oz": ("mass", 0.028349523125),
    "lb": ("mass", 0.45359237),
    "st": ("mass", 6.35029318),
    "C": ("temperature", 1.0),
    "F": ("temperature", 1.0),
    "K": ("temperature", 1.0),
    "ms": ("time", 0.001),
    "s": ("time", 1.0),
    "min": ("time", 60.0),
    "h": ("time", 3600.0),
    "d": ("time", 86400.0),
    "wk": ("time", 604800.0),
    "bit": ("data", 0.125),
    "B": ("data", 1.0),
    "kB": ("data", 1e3),
    "MB": ("data", 1e6),
    "GB": ("data", 1e9),
    "TB": ("data", 1e12),
    "KiB": ("data", 2.0**10),
    "MiB": ("data", 2.0**20),
    "GiB": ("data", 2.0**30),
    "TiB": ("data", 2.0**40),
}
_TO_KELVIN: Final[dict[str, Callable[[float], float]]] = {
    "C": lambda v: v + 273.15,
    "F": lambda v: (v - 32) * 5 / 9 + 273.15,
    "K": lambda v: v,
}
_FROM_KELVIN: Final[dict[str, Callable[[float], float]]] = {
    "C": lambda k: k - 273.15,
    "F": lambda k: (k - 273.15) * 9 / 5 + 32,
    "K": lambda k: k,
}


class ConversionResult(BaseModel):
    """A converted quantity."""

    value: float
    from_unit: str
    to_unit: str
    result: float = Field(description="The converted value, rounded to 12 significant digits.")
    dimension: Dimension
    text: str = Field(description="The conversion as a readable line, e.g. '5 km = 3.10686 mi'.")


def _significant(value: float, digits: int = 12) -> float:
    return float(f"{value:.{digits}g}")


def convert(value: float, from_unit: str, to_unit: str) -> ConversionResult:
    """Convert `value` between two units of the same dimension; raises ToolError otherwise."""
    for unit in (from_unit, to_unit):
        if unit not in _UNITS:
            raise ToolError(f"Unknown unit {unit!r}; known units: {', '.join(_UNITS)}.")
    source_dim, source_size = _UNITS[from_unit]
    target_dim, target_size = _UNITS[to_unit]
    if source_dim != target_dim:
        same = ", ".join(unit for unit, (dim, _) in _UNITS.items() if dim == source_dim)
        raise ToolError(
            f"Cannot convert {from_unit!r} ({source_dim}) to {to_unit!r} ({target_dim}); "
            f"pick a to_unit of the same dimension: {same}."
        )
    if source_dim == "temperature":
        kelvin = _TO_KELVIN[from_unit](value)
        if kelvin < -1e-9:
            raise ToolError(f"{value} {from_unit} is below absolute zero (0 K = -273.15 C = -459.67 F).")
        result = _FROM_KELVIN[to_unit](max(kelvin, 0.0))
    else:
        result = value * source_size / target_size
    if not math.isfinite(result):
        raise ToolError(f"Converting {value} {from_unit} to {to_unit} overflows; use a smaller value.")
    result = _significant(result)
    return ConversionResult(
        value=value,
        from_unit=from_unit,
        to_unit=to_unit,
        result=result,
        dimension=source_dim,
        text=f"{value:g} {from_unit} = {result:.6g} {to_unit}",
    )


# -- text ------------------------------------------------------------------------------------------

_WORDS: Final = re.compile(r"[^\W_]+(?:['\u2019-][^\W_]+)*")
_SENTENCE_BREAK: Final = re.compile(r"[.!?…]+(?=\s|$)|\n\s*\n")
_STOPWORDS: Final = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "from",
        "has",
        "have",
        "i",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "our",
        "so",
        "that",
        "the",
        "their",
        "them",
        "they",
        "this",
        "to",
        "was",
        "we",
        "were",
        "will",
        "with",
        "you",
        "your",
    ]
)


class WordCount(BaseModel):
    """A frequent word and how often it occurs."""

    word: str
    count: int


class TextStats(BaseModel):
    """Counts and reading time for a text."""

    characters: int = Field(description="All characters, including spaces and line breaks.")
    characters_no_spaces: int = Field(description="Characters that are not whitespace.")
    words: int
    unique_words: int = Field(description="Distinct words, ignoring case.")
    sentences: int
    paragraphs: int = Field(description="Blocks of text separated by blank lines.")
    lines: int
    average_word_length: float = Field(description="Mean letters per word.")
    average_sentence_words: float = Field(description="Mean words per sentence.")
    reading_time_seconds: int = Field(description="Estimated silent reading time at words_per_minute.")
    reading_time: str = Field(description="The same, human readable (e.g. '2 min 30 s').")
    top_words: list[WordCount] = Field(description="Most frequent words, common English stop words left out.")


def text_statistics(text: str, words_per_minute: int = 238, top: int = 5) -> TextStats:
    """Count characters, words, sentences, paragraphs and lines, and estimate reading time."""
    words = _WORDS.findall(text)
    lowered = [word.lower() for word in words]
    sentences = sum(1 for part in _SENTENCE_BREAK.split(text) if _WORDS.search(part))
    paragraphs = sum(1 for block in re.split(r"\n\s*\n", text) if block.strip())
    seconds = math.ceil(len(words) * 60 / words_per_minute)
    minutes, rest = divmod(seconds, 60)
    counts = Counter(word for word in lowered if word not in _STOPWORDS and len(word) > 1)
    return TextStats(
        characters=len(text),
        characters_no_spaces=sum(1 for ch in text if not ch.isspace()),
        words=len(words),
        unique_words=len(set(lowered)),
        sentences=sentences,
        paragraphs=paragraphs,
        lines=len(text.splitlines()),
        average_word_length=round(sum(len(w) for w in words) / len(words), 2) if words else 0.0,
        average_sentence_words=round(len(words) / sentences, 2) if sentences else 0.0,
        reading_time_seconds=seconds,
        reading_time=f"{minutes} min {rest} s" if minutes else f"{rest} s",
        top_words=[WordCount(word=w, count=c) for w, c in counts.most_common(top)],
    )


# -- hashing ---------------------------------------------------------------------------------------

Algorithm = Literal["md5", "sha1", "sha256", "sha512"]
_DIGEST_HEX: Final[dict[str, int]] = {"md5": 32, "sha1": 40, "sha256": 64, "sha512": 128}


class HashResult(BaseModel):
    """A text's digest."""

    algorithm: Algorithm
    hex_digest: str = Field(description="The digest in lower-case hexadecimal.")
    input_bytes: int = Field(description="Length of the UTF-8 encoded input in bytes.")
    matches: bool | None = Field(description="Whether the digest equals `expected`; null when none was given.")


def hash_digest(text: str, algorithm: Algorithm = "sha256", expected: str | None = None) -> HashResult:
    """Hash the UTF-8 bytes of `text`; optionally compare with an expected hex digest."""
    data = text.encode("utf-8")
    digest = hashlib.new(algorithm, data, usedforsecurity=False).hexdigest()
    if expected is not None and len(expected) != _DIGEST_HEX[algorithm]:
        raise ToolError(
            f"expected has {len(expected)} hex digits but a {algorithm} digest has {_DIGEST_HEX[algorithm]}; "
            "check the algorithm or the digest."
        )
    matches = None if expected is None else expected.lower() == digest
    return HashResult(algorithm=algorithm, hex_digest=digest, input_bytes=len(data), matches=matches)


# -- MCP tools -------------------------------------------------------------------------------------

_UTILITY = types.ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)


def register_utility_tools(app: MCPServer[Any]) -> list[str]:
    """Register the utility tools on `app`; returns their names in registration order."""

    def calculate(
        expression: Annotated[
            str,
            Field(
                min_length=1,
                max_length=MAX_EXPRESSION_LENGTH,
                description="Arithmetic expression, e.g. '(1200 * 1.19) / 12' or 'sqrt(2) * 10'.",
            ),
        ],
    ) -> CalculationResult:
        """Evaluate an arithmetic expression exactly and safely.

        Supports + - * / // % ** with parentheses and unary minus, the constants pi, e and tau, and
        abs, round, min, max, sqrt, exp, log, log10, log2, floor, ceil, sin, cos, tan, radians,
        degrees. Integers are exact; exponents are limited to ±10000 and integer results to about
        3000 digits. Nothing else (names, attributes, imports) is evaluated.
        """
        return calculate_expression(expression)

    def convert_units(
        value: Annotated[float, Field(ge=-1e15, le=1e15, allow_inf_nan=False, description="The quantity to convert.")],
        from_unit: Annotated[Unit, Field(description="Unit of value (case-sensitive, e.g. 'km', 'F', 'MiB').")],
        to_unit: Annotated[Unit, Field(description="Unit to convert to; must measure the same thing as from_unit.")],
    ) -> ConversionResult:
        """Convert a quantity between units of length, mass, temperature, time or digital data.

        Length: mm cm m km in ft yd mi nmi. Mass: mg g kg t oz lb st. Temperature: C F K.
        Time: ms s min h d wk. Data: bit B kB MB GB TB (decimal) and KiB MiB GiB TiB (binary).
        """
        return convert(value, from_unit, to_unit)

    def text_stats(
        text: Annotated[str, Field(max_length=100_000, description="The text to analyse (up to 100000 characters).")],
        words_per_minute: Annotated[
            int, Field(ge=50, le=1_000, description="Reading speed for the time estimate. Default 238 (adults).")
        ] = 238,
        top_words: Annotated[int, Field(ge=0, le=50, description="How many frequent words to list. Default 5.")] = 5,
    ) -> TextStats:
        """Count the characters, words, sentences, paragraphs and lines of a text and estimate reading time.

        Also lists the most frequent words (common English stop words left out).
        """
        return text_statistics(text, words_per_minute, top_words)

    def hash_text(
        text: Annotated[
            str, Field(max_length=100_000, description="The text to hash, encoded as UTF-8 (up to 100000 characters).")
        ],
        algorithm: Annotated[Algorithm, Field(description="Digest algorithm. Default sha256.")] = "sha256",
        expected: Annotated[
            str | None,
            Field(
                pattern=r"^[0-9A-Fa-f]{32,128}$",
                description="A hex digest to compare with; the result's matches field says whether it equals.",
            ),
        ] = None,
    ) -> HashResult:
        """Compute the md5, sha1, sha256 or sha512 hex digest of a text, optionally checking it against one.

        For checksums and change detection, not for storing passwords.
        """
        return hash_digest(text, algorithm, expected)

    tools: list[tuple[Callable[..., Any], str]] = [
        (calculate, "Calculate"),
        (convert_units, "Convert units"),
        (text_stats, "Text statistics"),
        (hash_text, "Hash text"),
    ]
    for fn, title in tools:
        app.add_tool(fn, title=title, description=inspect.cleandoc(fn.__doc__ or ""), annotations=_UTILITY)
    return [fn.__name__ for fn, _ in tools]
