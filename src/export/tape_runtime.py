"""The runtime of a tape program exported to Python: the specified random
generator, bit for bit as tapec draws it.

tapec draws normals by Box-Muller with the pure-Rust `libm` crate's `log`
and `cos`, whose results differ from the C library's (Python's `math.log`
and `math.cos`) by one unit in the last place in a few percent of draws.
So both are ported here from `libm` (itself from musl and FreeBSD), step
for step, for every argument the generator can give them: `log` for any
number, `cos` for |x| below 2^20 * pi/2 (the generator's arguments are in
[0, 2*pi)). Each operation is one IEEE double operation, as in Rust, so
the results are the same bits. `tests/export_runtime.rs` compares a
million draws with tapec's.
"""
import linecache
import math
import os
import re
import struct
import sys

MASK64 = (1 << 64) - 1


def _bits(x):
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def _float(bits):
    return struct.unpack("<d", struct.pack("<Q", bits & MASK64))[0]


# log: libm/src/math/log.rs
_LN2_HI = _float(0x3FE62E42FEE00000)
_LN2_LO = _float(0x3DEA39EF35793C76)
_LG1 = _float(0x3FE5555555555593)
_LG2 = _float(0x3FD999999997FA04)
_LG3 = _float(0x3FD2492494229359)
_LG4 = _float(0x3FCC71C51D8E78AF)
_LG5 = _float(0x3FC7466496CB03DE)
_LG6 = _float(0x3FC39A09D078C69F)
_LG7 = _float(0x3FC2F112DF3E5244)
_X1P54 = _float(0x4350000000000000)


def log(x):
    """The natural logarithm, as libm's `log`."""
    ui = _bits(x)
    hx = ui >> 32
    k = 0
    if hx < 0x00100000 or (hx >> 31) != 0:
        if (ui << 1) & MASK64 == 0:
            return -math.inf
        if hx >> 31 != 0:
            return math.nan
        k -= 54
        x *= _X1P54
        ui = _bits(x)
        hx = ui >> 32
    elif hx >= 0x7FF00000:
        return x
    elif hx == 0x3FF00000 and (ui << 32) & MASK64 == 0:
        return 0.0
    hx = (hx + (0x3FF00000 - 0x3FE6A09E)) & 0xFFFFFFFF
    k += (hx >> 20) - 0x3FF
    hx = (hx & 0x000FFFFF) + 0x3FE6A09E
    ui = (hx << 32) | (ui & 0xFFFFFFFF)
    x = _float(ui)
    f = x - 1.0
    hfsq = 0.5 * f * f
    s = f / (2.0 + f)
    z = s * s
    w = z * z
    t1 = w * (_LG2 + w * (_LG4 + w * _LG6))
    t2 = z * (_LG1 + w * (_LG3 + w * (_LG5 + w * _LG7)))
    r = t2 + t1
    dk = float(k)
    return s * (hfsq + r) + dk * _LN2_LO - hfsq + f + dk * _LN2_HI


# cos: libm/src/math/cos.rs, k_cos.rs, k_sin.rs, rem_pio2.rs
_C1 = _float(0x3FA555555555554C)
_C2 = _float(0xBF56C16C16C15177)
_C3 = _float(0x3EFA01A019CB1590)
_C4 = _float(0xBE927E4F809C52AD)
_C5 = _float(0x3E21EE9EBDB4B1C4)
_C6 = _float(0xBDA8FAE9BE8838D4)
_S1 = _float(0xBFC5555555555549)
_S2 = _float(0x3F8111111110F8A6)
_S3 = _float(0xBF2A01A019C161D5)
_S4 = _float(0x3EC71DE357B1FE7D)
_S5 = _float(0xBE5AE5E68A2B9CEB)
_S6 = _float(0x3DE5D93A5ACFD57C)
_TO_INT = 1.5 / 2.2204460492503131e-16
_INV_PIO2 = _float(0x3FE45F306DC9C883)
_PIO2_1 = _float(0x3FF921FB54400000)
_PIO2_1T = _float(0x3DD0B4611A626331)
_PIO2_2 = _float(0x3DD0B4611A600000)
_PIO2_2T = _float(0x3BA3198A2E037073)
_PIO2_3 = _float(0x3BA3198A2E000000)
_PIO2_3T = _float(0x397B839A252049C1)


def _k_cos(x, y):
    z = x * x
    w = z * z
    r = z * (_C1 + z * (_C2 + z * _C3)) + w * w * (_C4 + z * (_C5 + z * _C6))
    hz = 0.5 * z
    w = 1.0 - hz
    return w + (((1.0 - w) - hz) + (z * r - x * y))


def _k_sin(x, y, iy):
    z = x * x
    w = z * z
    r = _S2 + z * (_S3 + z * _S4) + z * w * (_S5 + z * _S6)
    v = z * x
    if iy == 0:
        return x + v * (_S1 + z * r)
    return x - ((z * (0.5 * y - v * r) - y) - v * _S1)


def _medium(x, ix):
    tmp = x * _INV_PIO2 + _TO_INT
    f_n = tmp - _TO_INT
    n = int(f_n)
    r = x - f_n * _PIO2_1
    w = f_n * _PIO2_1T
    y0 = r - w
    ey = (_bits(y0) >> 52) & 0x7FF
    ex = ix >> 20
    if ex - ey > 16:
        t = r
        w = f_n * _PIO2_2
        r = t - w
        w = f_n * _PIO2_2T - ((t - r) - w)
        y0 = r - w
        ey = (_bits(y0) >> 52) & 0x7FF
        if ex - ey > 49:
            t = r
            w = f_n * _PIO2_3
            r = t - w
            w = f_n * _PIO2_3T - ((t - r) - w)
            y0 = r - w
    y1 = (r - y0) - w
    return n, y0, y1


def _near(x, sign, n):
    """x less n pi/2 (x plus, when x is negative), in two parts."""
    if sign == 0:
        z = x - n * _PIO2_1
        y0 = z - n * _PIO2_1T
        return n, y0, (z - y0) - n * _PIO2_1T
    z = x + n * _PIO2_1
    y0 = z + n * _PIO2_1T
    return -n, y0, (z - y0) + n * _PIO2_1T


def _rem_pio2(x):
    sign = _bits(x) >> 63
    ix = (_bits(x) >> 32) & 0x7FFFFFFF
    if ix <= 0x400F6A7A:
        if (ix & 0xFFFFF) == 0x921FB:
            return _medium(x, ix)
        if ix <= 0x4002D97C:
            return _near(x, sign, 1)
        return _near(x, sign, 2)
    if ix <= 0x401C463B:
        if ix <= 0x4015FDBC:
            if ix == 0x4012D97C:
                return _medium(x, ix)
            return _near(x, sign, 3)
        if ix == 0x401921FB:
            return _medium(x, ix)
        return _near(x, sign, 4)
    if ix < 0x413921FB:
        return _medium(x, ix)
    raise ValueError("cos is ported for |x| < 2^20 * pi/2 only")


def cos(x):
    """The cosine, as libm's `cos`, for |x| < 2^20 * pi/2."""
    ix = (_bits(x) >> 32) & 0x7FFFFFFF
    if ix <= 0x3FE921FB:
        if ix < 0x3E46A09E and int(x) == 0:
            return 1.0
        return _k_cos(x, 0.0)
    if ix >= 0x7FF00000:
        return x - x
    n, y0, y1 = _rem_pio2(x)
    n &= 3
    if n == 0:
        return _k_cos(y0, y1)
    if n == 1:
        return -_k_sin(y0, y1, 1)
    if n == 2:
        return -_k_cos(y0, y1)
    return _k_sin(y0, y1, 1)


class Random:
    """The specified generator: SplitMix64, uniforms from the top 53 bits,
    Box-Muller normals, whole numbers by scaling a uniform."""

    def __init__(self, seed=0):
        self.seed(seed)

    def seed(self, n):
        self.state = n & MASK64

    def raw(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)

    def uniform(self):
        return (self.raw() >> 11) * (1.0 / (1 << 53))

    def normal(self):
        u1 = self.uniform()
        u2 = self.uniform()
        return math.sqrt(-2.0 * log(1.0 - u1)) * cos(2.0 * math.pi * u2)

    def int_in(self, lo, hi):
        return lo + math.floor(self.uniform() * float(hi - lo + 1))

    def pick(self, weights, total):
        """`Sample`: one uniform times the weights' sum, and the first
        column (1-based) whose running sum exceeds it, the last if none."""
        target = self.uniform() * total
        running = 0.0
        for k, w in enumerate(weights):
            running += w
            if running > target:
                return k + 1
        return len(weights)


# Output, as LANGUAGE.md section 7 prints it (src/eval/format.rs).

def real(x, decimals=6):
    """A real with `decimals` digits after the point, correctly rounded;
    `inf`, `-inf`; a real that rounds to zero never keeps its minus."""
    text = "%.*f" % (decimals, x)
    if text.startswith("-") and set(text[1:]) <= set("0."):
        return text[1:]
    return text


def _rows(m):
    """A matrix's rows as lists of floats: a list of lists, or anything with
    `.tolist()` (a tensor, an array)."""
    if hasattr(m, "detach"):
        m = m.detach()
    return m.tolist() if hasattr(m, "tolist") else m


def text(v):
    """A value as `Write` prints it."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return real(v)
    if isinstance(v, str):
        return v
    if _integer(v):
        return str(_int(v))
    if _is_tensor(v) and v.dim() == 0:
        return real(_value(v))
    return "\n".join(" ".join(real(x) for x in row) for row in _rows(v))


def field(v, width, decimals=None, where=None):
    """A value with Pascal's `:width` and `:width:decimals`; on a matrix the
    specifier applies to each element."""
    def checked(n, what):
        if n is not None and not (_integer(n) and 0 <= _int(n) <= 1000):
            # An Integer out of range is shown; anything else by its kind,
            # a Real with its value.
            this = (text(n) if _integer(n) else f"the Real {text(n)}" if _number(n)
                    else _kind(n))
            raise TapeError(where, f"a {what} must be an Integer from 0 to 1000, but this is {this}")
        return _int(n)
    width = checked(width, "field width")
    if decimals is not None and type(v) in (str, bool):
        raise TapeError(where, f"`:w:d` needs a number, but this is {_kind(v)}")
    v, decimals = _value(v), checked(decimals, "number of decimals")
    if _is_tensor(v) and v.dim() == 0:
        v = float(v)
    if not isinstance(v, (bool, int, float, str)):
        d = 6 if decimals is None else decimals
        return "\n".join(" ".join(real(x, d).rjust(width) for x in row) for row in _rows(v))
    if decimals is not None:
        return real(float(v), decimals).rjust(width)
    return text(v).rjust(width)


def show(m):
    """`Show(m)`: each row as `  row i: x x x`."""
    return "".join(
        "  row %d: %s\n" % (i + 1, " ".join(real(x) for x in row)) for i, row in enumerate(_rows(m))
    )


# Errors and Integers (LANGUAGE.md sections 3 and 8).

_COMMENT = re.compile(r"#\s*(\S+:\d+)\s*$")
_places = {}


def _here():
    """The place in the program of the statement running now: the source
    line that the trailing comment (`# gpt.tape:67`) of the script's
    innermost line names, or of the nearest line above it with one."""
    f = sys._getframe(1)
    while f is not None and f.f_code.co_filename == __file__:
        f = f.f_back
    if f is None:
        return "?"
    return _place(f.f_code.co_filename, f.f_lineno)


def _place(filename, lineno):
    """The place in the program the script's line `lineno` comes from."""
    key = (filename, lineno)
    if key not in _places:
        _places[key] = "?"
        for n in range(lineno, 0, -1):
            found = _COMMENT.search(linecache.getline(key[0], n))
            if found:
                _places[key] = found.group(1)
                break
    return _places[key]


class TapeError(Exception):
    """An error the language raises at run time, naming where in the
    program's source it happened (`gpt.tape:67:5`)."""

    def __init__(self, where, message):
        where = where or _here()
        super().__init__(f"{where}: {message}")
        self.where = where
        self.message = message


_LOWEST, _HIGHEST = -(1 << 63), (1 << 63) - 1


def _fits(n, where, what):
    if _LOWEST <= n <= _HIGHEST:
        return n
    raise TapeError(where, f"integer overflow: {what} does not fit in 64 bits")


def int_add(a, b, where=None):
    return _fits(a + b, where, f"{a} + {b}")


def int_sub(a, b, where=None):
    return _fits(a - b, where, f"{a} - {b}")


def int_mul(a, b, where=None):
    return _fits(a * b, where, f"{a} * {b}")


def int_neg(a, where=None):
    return _fits(-a, where, f"-({a})")


def _int_operands(a, b, symbol, where):
    """The exact values of `div`'s or `mod`'s operands, which must be
    Integers (a Real made by `Nudge`, or a Real on a tape, is refused)."""
    if not (_integer(a) and _integer(b)):
        raise TapeError(where, f"cannot apply `{symbol}` to {_kind(a)} and {_kind(b)}")
    return _int(a), _int(b)


def int_div(a, b, where=None):
    """`a div b`: the quotient rounded toward zero, as Pascal's; not
    recorded, so of recorded Integers too a plain Integer."""
    a, b = _int_operands(a, b, "div", where)
    if b == 0:
        raise TapeError(where, "`div` by zero")
    q = abs(a) // abs(b)
    return _fits(q if (a < 0) == (b < 0) else -q, where, f"{a} div {b}")


def int_mod(a, b, where=None):
    """`a mod b`: the remainder of `div`, with the sign of `a`."""
    a, b = _int_operands(a, b, "mod", where)
    if b == 0:
        raise TapeError(where, "`mod` by zero")
    r = abs(a) % abs(b)
    return -r if a < 0 else r



# The program's frame: running it, routines, conditions, types.

def run(program, files="", program_file=None, folder=None, declared=()):
    """Runs the program's statements; a run-time error is printed as tapec
    prints its first line, with where it happened, and ends with status 1.
    `files`: the program's folder from the script's, where the paths it
    names start (the script's folder itself unless said); `program_file`:
    the program's own file there, which `Save` does not write over;
    `folder`: the program's folder as `tapec export` was given it, which
    a message naming a file starts from (`_named`); `declared`: the
    program's own variables that a `var` declares."""
    _declared[None] = set(declared)
    _script_globals[0] = program.__globals__
    _base[0] = os.path.join(os.path.dirname(os.path.abspath(sys.argv[0])), files)
    _folder_as_given[0] = folder
    if program_file is not None:
        _program_file[0] = os.path.join(_base[0], program_file)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 4 * MAX_CALL_DEPTH + 200))
    sys.argv[:] = _take_options(sys.argv)
    if _options["device"] != "cpu":
        try:
            _torch().zeros(1, device=_options["device"])
        except (RuntimeError, AssertionError) as e:
            sys.exit(f"{sys.argv[0]}: no device {_options['device']} here ({e})")
    try:
        program()
    except TapeError as e:
        _flush()
        sys.stderr.write(f"Error: {e.message}\n  at {e.where}\n")
        sys.exit(1)
    except NameError as e:
        # A variable read before anything was assigned to it, in a line of
        # the script (not a fault of this runtime's, which stays a
        # traceback).
        frames = []
        tb = e.__traceback__
        while tb is not None:
            frames.append(tb)
            tb = tb.tb_next
        last = frames[-1].tb_frame.f_code.co_filename if frames else __file__
        name = getattr(e, "name", None)
        if name is None:
            # An UnboundLocalError names its variable only in its message.
            quoted = re.search(r"'([^']+)'", str(e))
            name = quoted.group(1) if quoted else None
        if last == __file__ or name is None:
            raise
        shown = name[:-1] if name.endswith("_") else name
        declared = " is declared but" if shown in _declared[_scope_of(name, frames)] else ""
        where = _place(last, frames[-1].tb_lineno)
        _flush()
        sys.stderr.write(f"Error: `{shown}`{declared} has no value yet\n  at {where}\n")
        sys.exit(1)
    except ModuleNotFoundError as e:
        # The matrices and tapes are PyTorch's; a program of plain numbers
        # and strings runs without it.
        if e.name != "torch":
            raise
        _flush()
        sys.stderr.write(
            "Error: this program's matrices and tapes need PyTorch, which is not installed"
            " (pip install torch)\n"
        )
        sys.exit(1)
    except KeyboardInterrupt:
        _flush()
        sys.stderr.write("interrupted\n")
        sys.exit(130)
    _flush()


def _quiet_stdout():
    """A reader that stopped reading (`| head`): the rest of the output is
    dropped, quietly, as tapec drops it, and the program runs on (to its
    end, or to an error, which stderr still shows)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def _flush():
    """The output written so far, sent on (or dropped if no one reads)."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _quiet_stdout()
        sys.stdout.flush()


MAX_CALL_DEPTH = 1000
# For each routine running, the positions among its `var` parameters of
# those it assigned, in the order of their last assignment; and, once a
# call has returned, those of the call.
_var_frames = []
_last_var = [[]]
# For each routine running, what each of its `var` parameters names at
# last, through the callers' `var` parameters: the declared type (or None)
# and the name of that variable, and where it is a global that some
# routine reads while the call runs, its name in the script; or None.
_var_places = []
# The values each running call's `var` parameters were given, in order:
# an element set through one changes the matrix in place only while the
# parameter still holds the value it was given (`set_element`).
_var_given = []
# The script's globals, where such a global is assigned at once.
_script_globals = [{}]


def _assigned_last(frame, k):
    """`k` moved to the end of `frame`, the running routine's `var`
    parameters in the order of their last assignment."""
    if k in frame:
        frame.remove(k)
    frame.append(k)


def _parts(place):
    """What a `var` parameter names (see `routine`): the variable's
    declared type (or None), its name, the name in the script of a global
    that must take an assignment at once (or None), and the annotation of
    the nearest caller's `var` parameter it was passed on through that has
    one (see `via`), or None."""
    if place is None:
        return None, None, None, None
    kind, caller, *rest = place
    return kind, caller, rest[0] if rest else None, rest[1] if len(rest) > 1 else None


def var_assigned(v, k, name):
    """An assignment to the running routine's `k`th `var` parameter, named
    `name`: `v`, as the variable it names holds it (an Integer widened to
    a declared Real), or tapec's error where that variable, or a caller's
    `var` parameter it was passed on through, is declared of another
    type."""
    _assigned_last(_var_frames[-1], k)
    places = _var_places[-1]
    kind, caller, script_global, along = _parts(places[k] if k < len(places) else None)
    if along is not None:
        want, param, routine = along
        out = _as_type(v, want)
        if out is None:
            raise TapeError(None, f"`{name}` names `{routine}`'s `var` parameter `{param}`, "
                                  f"which is declared {want}, but is given {_kind(v)}")
        v = out
    if kind is not None:
        out = _as_type(v, kind)
        if out is None:
            raise TapeError(None, f"`{name}` names the caller's `{caller}`, which is declared "
                                  f"{kind}, but is given {_kind(v)}")
        v = out
    if script_global is not None:
        # A global that a routine reads before this call returns: it
        # holds the value at once, as in tapec.
        _script_globals[0][script_global] = v
    return v


def var_declared(k):
    """The declared type (or None) and the name of the variable the
    running routine's `k`th `var` parameter names, and the first caller's
    `var` parameter declared Integer it was passed on through (its name
    and its routine's, or None), for `nudge`."""
    kind, caller, _, along = _parts(via(k))
    by = along[1:] if along is not None and along[0] == "Integer" else None
    return kind, caller, by


def var_nudged(v, k):
    """`v`, what `Nudge` made of the running routine's `k`th `var`
    parameter: a global it names that a routine reads while the call runs
    takes it at once (see `var_assigned`)."""
    script_global = _parts(via(k))[2]
    if script_global is not None:
        _script_globals[0][script_global] = v
    return v


def via(k, annotation=None):
    """What the running routine's `k`th `var` parameter names, passed on
    to a routine it calls (see `routine`); with the parameter's own
    `annotation` (its declared type, its name and its routine's), which
    an assignment through the parameter it is passed to must fit too, in
    place of one it was passed on with (each typed one is of the type of
    the nearest, held to it at its call)."""
    places = _var_places[-1] if _var_places else ()
    place = places[k] if k < len(places) else None
    if annotation is None:
        return place
    kind, caller, script_global, _ = _parts(place)
    return kind, caller, script_global, annotation


def came_back(values, offset, names=None, mine=None):
    """What a routine with `var` parameters returned (its result first when
    `offset` is 1, then its `var` parameters' values), with the ones it
    assigned assigned by the caller in the same order, the last one last.
    Called from a tape's own statements, `names` are the caller's
    variables, and each such value is recorded as the variable's own, the
    last one the tape's result so far (as tapec records an assignment
    through a `var` parameter); called from a routine, `mine` gives each
    argument's position among the caller's own `var` parameters, so that
    passing one on and having it assigned counts as assigning it."""
    count = offset + len(names if names is not None else mine)
    assigned = _last_var[0]
    if names is not None:
        values = [values] if count == 1 else list(values)
        for k in assigned:
            values[offset + k] = on_tape(values[offset + k], names[k])
        return values[0] if count == 1 else tuple(values)
    for k in assigned:
        if mine[k] is not None:
            _assigned_last(_var_frames[-1], mine[k])
    return values
_depth = [0]
_base = [None]
# The program's folder as `tapec export` was given it (see `run`).
_folder_as_given = [None]
# The variables a `var` declares: the program's own under None, and each
# routine's under its function's code.
_declared = {None: set()}


def _scope_of(name, frames):
    """Where the variable the script calls `name`, read with no value in the
    innermost of the traceback's `frames`, lives: the code of the routine
    it is a local of, or None for the program's own."""
    code = frames[-1].tb_frame.f_code
    if name not in code.co_varnames + code.co_cellvars + code.co_freevars:
        return None
    for tb in reversed(frames):
        if tb.tb_frame.f_code in _declared:
            return tb.tb_frame.f_code
    return None


def routine(name, params=(), types=(), function=None, declared=()):
    """A routine's calls: counted, so that nesting deeper than the
    language allows is its error, not Python's; its arguments checked
    against the parameters' (named `params`) declared types (`types`, None
    where there is none, "var Real" for a `var` parameter, "var" for one
    with no type), a `var` parameter's type against the variable's it
    names (`_one_type`), as errors of
    the call; and a function's `Result` checked to be set when it returns
    (`function`: where its header is). `declared`: its variables that a
    `var` declares. A call's `places` are, for each `var` parameter, what
    `_var_places` holds: the declared type and name of the caller's
    variable it names, which an assignment to it must fit, and the name of
    a global that it must assign at once (`var_assigned`)."""
    def given(a, param, t):
        if t is None or t == "var":
            return a
        if t.startswith("var "):
            # The caller's variable itself: checked, never widened, so an
            # Integer on the tape stays the tape's value.
            typed(a, t[len("var "):], param)
            return a
        return typed(a, t, param)

    def wrap(body):
        _declared[body.__code__] = set(declared)

        def call(*args, places=()):
            if _depth[0] >= MAX_CALL_DEPTH:
                raise TapeError(None, f"calls are nested more than {MAX_CALL_DEPTH} deep")
            if places:
                # Each `var` parameter's type held to the variable's where
                # its argument is checked, in the order of the arguments.
                given_args, k = [], 0
                for a, p, t in zip(args, params, types):
                    given_args.append(given(a, p, t))
                    if t is not None and t.startswith("var"):
                        if k < len(places):
                            _one_type(name, p, t[len("var "):], places[k])
                        k += 1
                args = given_args + list(args[len(types):])
            else:
                args = [given(a, p, t) for a, p, t in zip(args, params, types)] + list(args[len(types):])
            _depth[0] += 1
            _var_frames.append([])
            _var_places.append(places)
            _var_given.append(tuple(a for a, t in zip(args, types)
                                    if t is not None and t.startswith("var")))
            try:
                out = body(*args)
            finally:
                _depth[0] -= 1
                _last_var[0] = _var_frames.pop()
                _var_places.pop()
                _var_given.pop()
            if function and (out[0] if type(out) is tuple else out) is None:
                raise TapeError(function, f"`{name}` ended without setting `Result`")
            return out
        call.__name__ = body.__name__
        call.__doc__ = body.__doc__
        return call
    return wrap


def _one_type(routine, param, kind, place):
    """tapec's error where the `var` parameter `param` of `routine`,
    declared `kind` (or "" for none), names a variable of another declared
    type (`place`, see `_parts`): the nearest caller's `var` parameter's
    it was passed on through, else the variable's own."""
    theirs, caller, _, along = _parts(place)
    named = f"`{caller}`"
    if along is not None:
        theirs, their_param, their_routine = along
        named = f"`{their_routine}`'s `var` parameter `{their_param}`"
    if kind and theirs is not None and theirs != kind:
        raise TapeError(None, f"`{param}` of `{routine}` is declared {kind}, but it names "
                              f"{named}, declared {theirs}")


def _kind(v):
    if _integer(v):
        return "an Integer"
    if _is_tensor(v) and v.dim() == 0:
        return "a Real"
    if _is_matrix(v):
        return "a %d×%d matrix" % tuple(v.shape)
    if type(v) is bool:
        return "a Boolean"
    if type(v) is float:
        return "a Real"
    if type(v) is str:
        return "a String"
    return "a matrix"


def chain(value, *steps):
    """A long run of operators of one level, `a + b - c ...` (the script
    writes a short one as nested calls): `steps` alternate an operator
    (a function of this runtime, or "and" or "or") and its right operand
    as a function of no arguments, called just before its operator
    applies, so that operands run in the nested calls' order and `and`
    and `or` skip theirs as they do there."""
    for i in range(0, len(steps), 2):
        op, operand = steps[i], steps[i + 1]
        if op == "and":
            value = and_(value, operand)
        elif op == "or":
            value = or_(value, operand)
        else:
            value = op(value, operand())
    return value


def condition(v, what, where=None):
    """The condition of `what` (`if`, `while`, `until`): a Boolean."""
    if type(v) is not bool:
        raise TapeError(where, f"`{what}` needs a Boolean condition, but this is {_kind(v)}")
    return v


def _logical(a, right, word, skips_on, where):
    """`a and b` or `a or b`, where `right` gives `b`: not asked for when
    `a` alone decides (`skips_on`); both sides must be Booleans."""
    if a is skips_on:
        return a
    b = right()
    if type(a) is not bool or type(b) is not bool:
        raise TapeError(where, f"cannot `{word}` {_kind(a)} and {_kind(b)}")
    return b


def and_(a, right, where=None):
    return _logical(a, right, "and", False, where)


def or_(a, right, where=None):
    return _logical(a, right, "or", True, where)


def bound(v, where=None):
    if not _integer(v):
        raise TapeError(where, f"a `for` bound must be an Integer, but this is {_kind(v)}")
    return _int(v)


def _as_type(v, kind):
    """`v` as a variable declared `kind` holds it (an Integer widened to a
    Real), or None if it is not of that type."""
    if kind == "Integer" and _integer(v):
        return v
    if kind == "Real" and type(v) is int:
        return float(v)
    if kind == "Real" and _integer(v):
        return v * 1.0  # a Real now, still on the tape
    if kind == "Real" and _number(v):
        return v
    if kind == "Matrix" and _is_matrix(v):
        return v
    wanted = {"Boolean": bool, "String": str}.get(kind)
    return v if wanted is not None and type(v) is wanted else None


def typed(v, kind, name, where=None):
    """`v` given to `name`, declared `kind`: as `_as_type` makes it, or
    tapec's error. A `var` argument not assigned yet passes."""
    if type(v) is _Unset:
        return v
    out = _as_type(v, kind)
    if out is None:
        raise TapeError(where, f"`{name}` is declared {kind} but is given {_kind(v)}")
    return out


def declare(v, kind, name, where=None):
    """`var name: kind` run where `name` already holds `v`: that value must
    be of the type too."""
    out = _as_type(v, kind)
    if out is None:
        raise TapeError(where, f"`{name}` cannot be declared {kind}: it already holds {_kind(v)}")
    return out


def _is_tensor(v):
    return type(v).__module__.startswith("torch")


def _number(v):
    """An Integer, a Real, or a Real on a tape (a 0-d tensor)."""
    return type(v) in (int, float) or (_is_tensor(v) and v.dim() == 0)


def _is_matrix(v):
    return _is_tensor(v) and v.dim() == 2


# An Integer read inside a tape is recorded, as in tapec: its value stays
# an exact Integer and it gets a Real blame. In the script it is a 0-d
# tensor (which carries the blame) with the exact value beside it, `_int`.

def _integer(v):
    """Whether `v` is an Integer: a plain int, or one recorded on a tape."""
    return type(v) is int or (_is_tensor(v) and getattr(v, "_int", None) is not None)


def _int(v):
    """An Integer's exact value (a recorded one's `_int`); anything else as
    it is. Where the language takes an Integer's value only (a bound, an
    index, a size), this is what is used."""
    n = getattr(v, "_int", None) if _is_tensor(v) else None
    return v if n is None else n


def _value(v):
    """A number's value for what reads it without recording it (a
    comparison, `Round`, `Min`, output): an Integer's exact value, a Real on
    a tape as a float; anything else as it is."""
    if _integer(v):
        return _int(v)
    if _is_tensor(v) and v.dim() == 0:
        return float(v.detach())
    return v


def _recorded_int(t, n):
    """`t`, the tensor of an Integer on a tape, carrying its exact value `n`."""
    t._int = n
    return t


def _int_result(a, b, n, f):
    """`a op b` of two Integers whose exact value is `n`: an Integer, and
    where either side is recorded, recorded too (`f` on the tensors)."""
    if type(a) is int and type(b) is int:
        return n
    return _recorded_int(f(_as_operand(a), _as_operand(b)), n)


def _arith(a, b):
    """Whether `a op b` must be done by torch, on a tape: either is a tensor."""
    return _is_tensor(a) or _is_tensor(b)


def _nan_at(shape, k):
    """Where the element `k` (counted from 0, row by row) of a value of
    `shape` is, as tapec names a NaN's place: ` at row 1, column 2`, and
    nothing for a number or a 1×1 matrix."""
    if len(shape) < 2 or tuple(shape) == (1, 1):
        return ""
    return f" at row {k // shape[1] + 1}, column {k % shape[1] + 1}"


def _nan_made(t, where, what):
    """`what` made a NaN in the tensor `t`: tapec's error, naming the first
    NaN's place."""
    import torch
    first = int(torch.isnan(t.detach()).reshape(-1).nonzero()[0])
    return TapeError(where, f"{what} made a NaN (not a number){_nan_at(t.shape, first)}")


def _checked(t, where, what, *operands):
    """`t`, which the operation `what` made, if it holds no NaN; on a tape,
    with its `operands` (tapec's inputs, in order) noted (`_record`)."""
    import torch
    if bool(torch.isnan(t).any()):
        raise _nan_made(t, where, what)
    if operands:
        _record(t, what.strip("`"), operands)
    return t


def _record(t, name, operands):
    """Notes, for the reverse walk's NaN message, that the operation tapec
    calls `name` made `t` of `operands` on the open tape: each operand
    known as its step of the graph (a leaf as itself)."""
    def step(x):
        if not _is_tensor(x):
            return None
        return x.grad_fn if x.grad_fn is not None else x
    tape = _tape[0]
    if tape is not None and tape.open and getattr(t, "grad_fn", None) is not None:
        tape.ops[t.grad_fn] = (name, [step(x) for x in operands])


def _real(x, where, what):
    if x != x:
        raise TapeError(where, f"{what} made a NaN (not a number)")
    return x


# Operators (LANGUAGE.md section 4): Integers stay Integers, an Integer
# and a Real make a Real, `/` always makes a Real.

# The most bytes a string may hold, as in tapec.
MAX_STRING = 1 << 28


def _string_fits(parts, where):
    """Refuses the string `parts` joined would make if it passes
    `MAX_STRING` bytes, in tapec's words. A character is at most four
    bytes, so the bytes are counted only where it might."""
    if sum(len(p) for p in parts) * 4 <= MAX_STRING:
        return
    n = sum(len(p.encode("utf-8", "surrogatepass")) for p in parts)
    if n > MAX_STRING:
        raise TapeError(where, f"a string of {n} bytes is too long")


def add(a, b, where=None):
    if _is_matrix(a) or _is_matrix(b):
        return _elementwise(a, b, where, "add", lambda x, y: x + y, "`+`")
    if _integer(a) and _integer(b):
        return _int_result(a, b, int_add(_int(a), _int(b), where), lambda x, y: x + y)
    if type(a) is str and type(b) is str:
        _string_fits((a, b), where)
        return a + b
    if _number(a) and _number(b):
        if _arith(a, b):
            return _checked(a + b, where, "`+`", a, b)
        return _real(float(a) + float(b), where, "`+`")
    raise TapeError(where, f"cannot add {_kind(a)} and {_kind(b)}")


def sub(a, b, where=None):
    if _is_matrix(a) or _is_matrix(b):
        return _elementwise(a, b, where, "subtract", lambda x, y: x - y, "`-`")
    if _integer(a) and _integer(b):
        return _int_result(a, b, int_sub(_int(a), _int(b), where), lambda x, y: x - y)
    if _number(a) and _number(b):
        if _arith(a, b):
            return _checked(a - b, where, "`-`", a, b)
        return _real(float(a) - float(b), where, "`-`")
    raise TapeError(where, f"cannot subtract {_kind(a)} and {_kind(b)}")


def mul(a, b, where=None):
    if _is_matrix(a) and _is_matrix(b):
        (m, k), (k2, n) = tuple(a.shape), tuple(b.shape)
        if k != k2:
            raise TapeError(where, f"cannot multiply a {m}×{k} by a {k2}×{n}: the left has "
                            f"{_counted(k, 'column')} but the right has {_counted(k2, 'row')}")
        if m * n > MAX_ELEMENTS:
            raise TapeError(where, f"a {m}×{n} matrix is too large")
        return _checked(a @ b, where, "matrix product", a, b)
    if _is_matrix(a) or _is_matrix(b):
        if not (_number(a) or _is_matrix(a)) or not (_number(b) or _is_matrix(b)):
            raise TapeError(where, f"cannot multiply {_kind(a)} and {_kind(b)}")
        return _checked(_as_operand(a) * _as_operand(b), where, "`*`", a, b)
    if _integer(a) and _integer(b):
        return _int_result(a, b, int_mul(_int(a), _int(b), where), lambda x, y: x * y)
    if _number(a) and _number(b):
        if _arith(a, b):
            return _checked(a * b, where, "`*`", a, b)
        return _real(float(a) * float(b), where, "`*`")
    raise TapeError(where, f"cannot multiply {_kind(a)} and {_kind(b)}")


def divide(a, b, where=None):
    if _is_matrix(a) or _is_matrix(b):
        return _elementwise(a, b, where, "divide", lambda x, y: x / y, "`/`")
    if not (_number(a) and _number(b)):
        raise TapeError(where, f"cannot divide {_kind(a)} and {_kind(b)}")
    if _arith(a, b):
        return _checked(a / (float(b) if type(b) is int else b), where, "`/`", a, b)
    a, b = float(a), float(b)
    if b == 0.0:
        if a == 0.0 or a != a:
            raise TapeError(where, "`/` made a NaN (not a number)")
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    return _real(a / b, where, "`/`")


def neg(a, where=None):
    if _integer(a):
        return _int_result(a, 0, int_neg(_int(a), where), lambda x, _: -x)
    if type(a) is float or _number(a) or _is_matrix(a):
        return -a
    raise TapeError(where, f"cannot negate {_kind(a)}")


def not_(a, where=None):
    if type(a) is not bool:
        raise TapeError(where, f"`not` needs a Boolean, but this is {_kind(a)}")
    return not a


def _compare(a, b, where, ordered):
    """The values `a` and `b` compare by: two numbers, two Strings, or (for
    `=` and `<>`, not `ordered`) two Booleans."""
    if _integer(a) and _integer(b):
        return _int(a), _int(b)
    if _number(a) and _number(b):
        return float(_value(a)), float(_value(b))  # a Real on a tape compares by its value
    if type(a) is type(b) and (type(a) is str or (type(a) is bool and not ordered)):
        return a, b
    raise TapeError(where, f"cannot compare {_kind(a)} and {_kind(b)}")


def _same_matrix(a, b):
    """`a = b` of two matrices: the same shape and every element equal."""
    import torch
    return tuple(a.shape) == tuple(b.shape) and bool(torch.equal(a.detach(), b.detach()))


def eq(a, b, where=None):
    if _is_matrix(a) and _is_matrix(b):
        return _same_matrix(a, b)
    a, b = _compare(a, b, where, False)
    return a == b


def ne(a, b, where=None):
    if _is_matrix(a) and _is_matrix(b):
        return not _same_matrix(a, b)
    a, b = _compare(a, b, where, False)
    return a != b


def lt(a, b, where=None):
    a, b = _compare(a, b, where, True)
    return a < b


def le(a, b, where=None):
    a, b = _compare(a, b, where, True)
    return a <= b


def gt(a, b, where=None):
    a, b = _compare(a, b, where, True)
    return a > b


def ge(a, b, where=None):
    a, b = _compare(a, b, where, True)
    return a >= b


def write(*parts):
    """`Write`: each part as `text` prints it (a part with a field is
    already the `field` text); nothing while `CheckBlame` replays."""
    if _replaying[0] is None:
        out = "".join(text(p) for p in parts)
        try:
            sys.stdout.write(out)
        except BrokenPipeError:
            _quiet_stdout()


def writeln(*parts):
    """`WriteLn`: `Write`, then the end of the line."""
    write(*parts, "\n")


# Builtins of numbers and text (LANGUAGE.md section 6).

INF = math.inf
_rng = Random(0)


class _Unset:
    """What a `var` argument holds before the routine assigns it: the
    caller's variable `name` with no value, `declared` or not."""

    def __init__(self, name="", declared=False):
        self.name, self.declared = name, declared

    def __repr__(self):
        return f"UNSET({self.name})"


UNSET = _Unset()


def is_unset(v):
    """Whether `v` is the mark a variable with no value went into a call
    as, and came back as, unassigned."""
    return type(v) is _Unset


def unset(name, declared=False):
    """The caller's variable `name`, with no value, passed as a `var` argument."""
    return _Unset(name, declared)


def got(v, name, where=None):
    """A routine's read of `name`, a `var` parameter or its `Result`, which
    must hold a value by then."""
    if type(v) is _Unset and not v.declared:
        raise TapeError(where, f"`{name}` names the caller's `{v.name}`, which has no value yet")
    if v is None or type(v) is _Unset:
        raise TapeError(where, f"`{name}` is declared but has no value yet")
    return v


# The builtins whose arguments the runtime checks: how many arguments each
# must be given, and what it takes, as tapec's message about a wrong
# argument says them (`takes` in src/declarations.rs, which a test there
# keeps the same).
_TAKES = {
    "Seed": (1, "an Integer"),
    "RandInt": (2, "two Integers, the lowest and the highest"),
    "ParamStr": (1, "an Integer"),
    "Progress": (2, "a step and a number of steps"),
    "Row": (2, "a matrix and a row number"),
    "Col": (2, "a matrix and a column number"),
    "RowRange": (3, "a matrix, a first row and a count"),
    "ColRange": (3, "a matrix, a first column and a count"),
    "Zeros": (2, "a number of rows and a number of columns"),
    "Ones": (2, "a number of rows and a number of columns"),
    "Random": (2, "a number of rows and a number of columns"),
    "Randn": (2, "a number of rows and a number of columns"),
    "Fill": (3, "a number of rows, a number of columns and a value"),
    "Eye": (1, "a size"),
    "CausalMask": (1, "a size"),
    "Transpose": (1, "a matrix"),
    "Sum": (1, "a matrix"),
    "Mean": (1, "a matrix"),
    "RowSum": (1, "a matrix"),
    "RowMean": (1, "a matrix"),
    "ColSum": (1, "a matrix"),
    "RowSoftmax": (1, "a matrix"),
    "LayerNorm": (1, "a matrix"),
    "Rows": (1, "a matrix"),
    "Cols": (1, "a matrix"),
    "Show": (1, "a matrix"),
    "Tanh": (1, "a number or a matrix"),
    "Exp": (1, "a number or a matrix"),
    "Log": (1, "a number or a matrix"),
    "Sqrt": (1, "a number or a matrix"),
    "ReLU": (1, "a number or a matrix"),
    "Sigmoid": (1, "a number or a matrix"),
    "Abs": (1, "a number or a matrix"),
    "Sqr": (1, "a number or a matrix"),
    "Hadamard": (2, "two matrices (or numbers) of shapes that broadcast"),
    "Power": (2, "a number or a matrix, and a number"),
    "Embed": (2, "a table (matrix) and a 1×T row of row numbers"),
    "CrossEntropy": (2, "a T×V matrix of logits and a 1×T row of column numbers"),
    "HStack": (2, "two matrices with the same number of rows"),
    "VStack": (2, "two matrices with the same number of columns"),
    "Sample": (1, "a 1×n row of weights"),
    "Argmax": (1, "a 1×n row"),
    "Round": (1, "a number"),
    "Trunc": (1, "a number"),
    "Min": (2, "two numbers"),
    "Max": (2, "two numbers"),
    "Length": (1, "a String"),
    "Vocab": (1, "a String"),
    "StrToInt": (1, "a String"),
    "StrToFloat": (1, "a String"),
    "Encode": (2, "a String and a vocabulary String"),
    "Decode": (2, "a 1×N row of ids and a vocabulary String"),
    "ReadText": (1, "a file path"),
    "Load": (1, "a file path"),
    "Save": (2, "a matrix and a file path"),
    "Plot": (3, "a matrix, and optionally a file path and a title"),
    "Nudge": (2, "a variable and a rate"),
}


def _int_arg(v, name, position, where=None):
    """Argument `position` (from 1) of the builtin `name`, which must be an
    Integer (not a Real, though a whole one, nor one `Nudge` made): its
    exact value. Anything else is tapec's error of the call."""
    if _integer(v):
        return _int(v)
    raise _arg_error(v, name, position, where)


def _arg_error(v, name, position, where=None):
    """tapec's error of a call of `name` whose argument `position` (from
    1), `v`, is not of the kind it takes."""
    count, takes = _TAKES[name]
    which = "its argument" if count == 1 else f"argument {position}"
    return TapeError(where, f"{name} takes {takes}, but {which} is {_kind(v)}")


def _str_arg(v, name, position, where=None):
    """Argument `position` of the builtin `name`, which must be a String."""
    if type(v) is not str:
        raise _arg_error(v, name, position, where)
    return v


def _number_arg(v, name, position, where=None):
    """Argument `position` of the builtin `name`, which must be a number:
    its value (see `_value`)."""
    if not _number(v):
        raise _arg_error(v, name, position, where)
    return _value(v)


def _sci(x):
    """`x` in Rust's `{:e}` form: the shortest digits that read back to
    it, as `1e300`, `-2.5e17`, `inf`, `NaN`."""
    if x != x:
        return "NaN"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if x == 0:
        return "-0e0" if math.copysign(1.0, x) < 0 else "0e0"
    from decimal import Decimal
    sign, digits, exponent = Decimal(repr(x)).normalize().as_tuple()
    digits = "".join(map(str, digits))
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return ("-" if sign else "") + mantissa + "e" + str(exponent + len(digits) - 1)


def _whole(r, x, where, name):
    """`r`, what `Round` or `Trunc` made of `x`, as an Integer: one too
    large is tapec's error, which shows `x` (large in short form)."""
    if not -9.223372036854776e18 <= r < 9.223372036854776e18:
        shown = real(x) if abs(x) < 1e16 else _sci(x)
        raise TapeError(where, f"{name}({shown}) does not fit in an Integer")
    return int(r)


def _round_half_away(x):
    """A finite `x` to the nearest whole number, halves away from zero (as
    `Round`, and Rust's `round`), as a float."""
    r = float(math.trunc(x))
    if abs(x - r) >= 0.5:
        r += math.copysign(1.0, x)
    return r


def round_(x, where=None):
    """`Round`: to the nearest whole number, halves away from zero."""
    x = _number_arg(x, "Round", 1, where)
    if type(x) is int:
        return _held(x)
    return _held(_whole(_round_half_away(x) if math.isfinite(x) else x, x, where, "Round"))


def trunc(x, where=None):
    x = _number_arg(x, "Trunc", 1, where)
    if type(x) is int:
        return _held(x)
    return _held(_whole(float(math.trunc(x)) if math.isfinite(x) else x, x, where, "Trunc"))


def min_(a, b, where=None):
    a, b = _number_arg(a, "Min", 1, where), _number_arg(b, "Min", 2, where)
    if type(a) is int and type(b) is int:
        return _held(min(a, b))
    return _held(float(b) if float(b) < float(a) else float(a))


def max_(a, b, where=None):
    a, b = _number_arg(a, "Max", 1, where), _number_arg(b, "Max", 2, where)
    if type(a) is int and type(b) is int:
        return _held(max(a, b))
    return _held(float(b) if float(b) > float(a) else float(a))


def length(s, where=None):
    return len(_str_arg(s, "Length", 1, where))


def seed(n, where=None):
    _rng.seed(_int_arg(n, "Seed", 1, where))


def rand_int(lo, hi, where=None):
    lo, hi = _int_arg(lo, "RandInt", 1, where), _int_arg(hi, "RandInt", 2, where)
    if lo > hi:
        raise TapeError(where, f"RandInt({lo}, {hi}): the lowest value is above the highest")
    return _rng.int_in(lo, hi)


def param_count(where=None):
    return len(sys.argv) - 1


def param_str(i, where=None):
    i = _int_arg(i, "ParamStr", 1, where)
    if not 0 <= i < len(sys.argv):
        raise TapeError(where, f"there is no argument {i}: ParamCount is {len(sys.argv) - 1}")
    return sys.argv[i]


_ESCAPED = {"\t": "\\t", "\r": "\\r", "\n": "\\n", "\0": "\\0"}


def _literal(text):
    """A String as the program would write it, in single quotes (`''` for
    a quote, a control character escaped as Rust escapes it), its first 40
    characters only and then its length when it is longer: as tapec shows
    a String in a message."""
    def shown(part):
        out = []
        for c in part:
            if c == "'":
                out.append("''")
            elif ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F:
                out.append(_ESCAPED.get(c, "\\u{%x}" % ord(c)))
            else:
                out.append(c)
        return "'" + "".join(out) + "'"
    if len(text) <= 40:
        return shown(text)
    return f"{shown(text[:40])}... (of {len(text)} characters)"


def str_to_int(text, where=None):
    text = _str_arg(text, "StrToInt", 1, where)
    digits = text[1:] if text[:1] in ("-", "+") else text
    if digits and all("0" <= c <= "9" for c in digits):
        n = int(text)
        if -(1 << 63) <= n < (1 << 63):
            return n
        raise TapeError(where, f"StrToInt: {_literal(text)} is too large for an Integer")
    raise TapeError(where, f"StrToInt: {_literal(text)} is not an Integer")


def str_to_float(text, where=None):
    x, what = _real_number(_str_arg(text, "StrToFloat", 1, where))
    if x is None:
        raise TapeError(where, f"StrToFloat: {_literal(text)} {what}")
    return x


def abs_(x, where=None):
    if type(x) is int:
        return _fits(abs(x), where, "Abs of the smallest Integer")
    return abs(x)


def sqrt(x, where=None):
    x = float(x)
    if x < 0:
        raise TapeError(where, "Sqrt made a NaN (not a number)")
    return math.sqrt(x)


def exp(x, where=None):
    try:
        return math.exp(float(x))
    except OverflowError:
        return math.inf


def log_(x, where=None):
    x = float(x)
    if x < 0 or x != x:
        raise TapeError(where, "Log made a NaN (not a number)")
    return -math.inf if x == 0 else math.log(x)


def sqr(x, where=None):
    if type(x) is int:
        return _fits(x * x, where, f"Sqr({x})")
    return _real(x * x, where, "Sqr")



# The tape (LANGUAGE.md section 5), on PyTorch's autograd: torch is
# imported by the first tape, so a program without one does not need it.

class _Tape:
    def __init__(self, number):
        self.number = number
        # The last assignment of the block's own statements: its value,
        # where it is, and the variable it gave the value.
        self.result = None
        self.result_where = None
        self.result_name = None
        # The numbers `Nudge` made since, by the variable's name.
        self.nudged = {}
        # The names of the variables whose values it recorded, and the
        # depth of calls it ran at.
        self.names = set()
        self.depth = _depth[0]
        # The operations `_record` noted, by their step of the graph.
        self.ops = {}
        # Recording: from `tape` to `end;`.
        self.open = True
        # The values the block assigned, in order, with where; and the leaves.
        self.kept = []
        self.leaves = []
        # Whether `CheckBlame` may replay the block; if so, what its
        # unrecorded builtins gave, by call site, in order (`_held`), and
        # how often each site has run in the replay under way.
        self.replays = False
        self.held = {}
        self.seen = {}
        # The program's variables as the block started (`tape_run`).
        self.started = {}
        # How often the block assigned each name as it ran, and as the
        # replay under way has.
        self.assigned = {}
        self.replay_assigned = {}


_tape = [None]
_tapes = [0]
# While `CheckBlame` replays a tape: (the name it nudges, its value).
_replaying = [None]
_replay_result = [None]


def tape_open(replays=False):
    """`tape`: a fresh tape; recording is on until `tape_close`. `replays`:
    the program calls `CheckBlame`, which may replay the block."""
    import torch
    if _tape[0] is not None and _tape[0].open:
        raise TapeError(None, "a tape cannot start inside another tape")
    _tapes[0] += 1
    _tape[0] = _Tape(_tapes[0])
    _tape[0].replays = replays
    _tape[0].rng_state = _rng.state  # a replay draws what the tape drew
    torch.set_grad_enabled(True)


def _held(value):
    """An unrecorded builtin's result (`Min`, `Max`, `Round`, `Trunc`,
    `Fill`, `Sample`, `Argmax`), called from the program: inside a tape
    that `CheckBlame` may replay, kept under its call site (the caller's
    code and instruction) in the order the site ran; while `CheckBlame`
    replays the block, the same site's same turn gets the kept one back
    (in float64, as the replay runs) in place of what the nudged values
    give. tapec replays the recorded operations, where such a result is a
    constant; the script replays the block's code, so it holds the values
    itself. A site the replay reaches more often than the block did (a
    comparison went the other way) works its value out again."""
    tape = _tape[0]
    if tape is None or not tape.replays or not (tape.open or _replaying[0] is not None):
        return value
    caller = sys._getframe(2)
    site = (caller.f_code, caller.f_lasti)
    if _replaying[0] is None:
        tape.held.setdefault(site, []).append(value)
        return value
    turn = tape.seen.get(site, 0)
    tape.seen[site] = turn + 1
    kept = tape.held.get(site, ())
    if turn >= len(kept):
        return value
    kept = kept[turn]
    return kept.double() if _is_tensor(kept) and kept.is_floating_point() else kept


def _mark(t):
    t._tape_number = _tape[0].number
    return t


def leaves(values, names):
    """The variables the tape reads before it assigns them, each a leaf
    that keeps its blame: a number becomes a 0-d tensor."""
    import torch
    out = []
    for v, name in zip(values, names):
        if type(v) is int:
            v = _recorded_int(torch.tensor(float(v), **_made_as(), requires_grad=True), v)
        elif type(v) is float:
            v = torch.tensor(v, **_made_as(), requires_grad=True)
        elif _is_tensor(v):
            n = getattr(v, "_int", None)
            v = v.detach().clone().requires_grad_(True)
            if n is not None:
                _recorded_int(v, n)
        else:
            out.append(v)
            continue
        out.append(_mark(v))
        _tape[0].leaves.append(v)
        _tape[0].names.add(name)
    return out


def global_leaves(scope, keys, names):
    """The globals that a tape inside a routine reads before it assigns
    them: each made a leaf where it lives, in `scope` (the module's
    globals, under the script's names `keys`), so that the routine's reads
    and a later `Blame` of it find the leaf."""
    values = leaves([scope.get(k, UNSET) for k in keys], names)
    for k, v in zip(keys, values):
        if type(v) is not _Unset:
            scope[k] = v


def on_tape(v, name=None):
    """A value the tape's own statement assigned to `name`: kept for
    `Blame`, and the tape's result so far. While `CheckBlame` replays the
    tape, the value it nudges stands in for `name`'s."""
    import torch
    tape = _tape[0]
    if _replaying[0] is not None:
        nudged, value = _replaying[0]
        if name == nudged:
            # The value `Blame` and `CheckBlame` read is the one of the
            # name's last assignment in the block, as it ran.
            tape.replay_assigned[name] = tape.replay_assigned.get(name, 0) + 1
            if tape.replay_assigned[name] == tape.assigned.get(name):
                v = value
        _replay_result[0] = v
        return v
    if tape is not None and tape.replays:
        tape.assigned[name] = tape.assigned.get(name, 0) + 1
    if type(v) is int:
        v = _recorded_int(torch.tensor(float(v), **_made_as()), v)
    elif type(v) is float:
        v = torch.tensor(v, **_made_as())
    if _is_tensor(v):
        # A value made of no leaf is recorded too, and gets its blame.
        if v.grad_fn is None and not v.requires_grad:
            v.requires_grad_(True)
        if v.grad_fn is not None:
            v.retain_grad()
        where = _here()
        _mark(v)
        _tape[0].kept.append((v, where))
        _tape[0].names.add(name)
    else:
        where = _here()
    _tape[0].result, _tape[0].result_where, _tape[0].result_name = v, where, name
    return v


def tape_run(block, scope):
    """Runs the block of a tape that `CheckBlame` may replay, first keeping
    the program's variables as they are when it starts (`scope`, a shallow
    copy): the replay starts from them, as tapec's replays the recorded
    operations on the values they read, whatever the variables hold by the
    time `CheckBlame` runs. The copy holds the matrices too, so an element
    set after the tape copies one rather than change it in place."""
    _tape[0].started = dict(scope)
    block()


def tape_close(replay=None, scope=None):
    """`end;`: the reverse walk from the result, blame 1. `replay` runs the
    block again and `scope` holds the program's variables, for
    `CheckBlame`."""
    import torch
    where = _here()
    tape = _tape[0]
    tape.open = False
    tape.replay, tape.scope = replay, scope
    r = tape.result
    if r is None:
        raise TapeError(where, "this tape assigns nothing, so it has no result")
    if not (_number(r) or (_is_tensor(r) and tuple(r.shape) == (1, 1))):
        raise TapeError(tape.result_where, "a tape must end on a number, but its last "
                        f"assignment gives `{tape.result_name}` {_kind(r)}")
    if r.requires_grad:
        # The graph is kept through the walk so that a NaN can be traced.
        r.backward(torch.ones_like(r), retain_graph=True)
    torch.set_grad_enabled(False)
    # A NaN the walk made stops the run, as tapec's walk does, naming the
    # statement whose per-link rule handed a NaN to what it read.
    held = [v for v, _ in tape.kept] + tape.leaves
    if any(v.grad is not None and bool(torch.isnan(v.grad).any()) for v in held):
        at, step = _nan_maker(tape, r)
        said = _walk_nan(tape, *step) if step else ""
        raise TapeError(at or where, "the reverse walk made a NaN" + said)


def _walk_nan(tape, node, k, blame, summed):
    """What tapec adds to \"the reverse walk made a NaN\" where the step
    `node` of the graph handed its input `k` (of its `next_functions`) a
    NaN `blame`, or a share that made that input's `blame` (the sum) NaN:
    the operation and its input as tapec numbers them, and the NaN's
    place. Nothing where the step is not an operation `_record` noted."""
    if node not in tape.ops:
        return ""
    name, inputs = tape.ops[node]
    target = node.next_functions[k][0]
    target = getattr(target, "variable", target)
    # The same value may be several inputs (`m * m`): the entry's rank
    # among those of that value is its rank among the inputs.
    rank = sum(1 for n, _ in node.next_functions[:k] if getattr(n, "variable", n) is target)
    matching = [j for j, x in enumerate(inputs) if x is target]
    if rank >= len(matching):
        return ""
    what = "a blame that, added to the blame it already had, is NaN" if summed else "a NaN blame"
    first = int(_torch().isnan(blame.detach()).reshape(-1).nonzero()[0])
    return (f": the per-link rule of {name} gave input {matching[rank] + 1} {what}"
            f"{_nan_at(blame.shape, first)}")


def _nan_maker(tape, r):
    """The place of the statement whose rule first made a NaN blame out of
    a blame with none, and the step (see `_walk_nan`): the walk is run
    again with a hook on every step of the graph, each step known by the
    statement that recorded it."""
    import torch
    own = {v.grad_fn: w for v, w in tape.kept if v.grad_fn is not None}
    place = {}
    for v, w in reversed(tape.kept):
        stack = [v.grad_fn] if v.grad_fn is not None else []
        while stack:
            node = stack.pop()
            if node is None or node in place or (node in own and own[node] != w):
                continue
            place[node] = w
            stack.extend(n for n, _ in node.next_functions)
    found = []

    def has_nan(grads):
        return any(g is not None and bool(torch.isnan(g).any()) for g in grads)

    def watch(node, w):
        def hook(handed, received):
            if not found and has_nan(handed) and not has_nan(received):
                k = next(k for k, g in enumerate(handed) if has_nan([g]))
                found.append((w, (node, k, handed[k], False)))
        return hook
    hooks = [node.register_hook(watch(node, w)) for node, w in place.items()]
    for v in [v for v, _ in tape.kept] + tape.leaves:
        v.grad = None
    with torch.enable_grad():
        r.backward(torch.ones_like(r))
    for h in hooks:
        h.remove()
    if found:
        return found[0]
    # No rule made the NaN: two shares summed to one (inf + -inf) where a
    # value has several uses. The statement named is the oldest use of the
    # newest such value, whose share arrives last in the walk: its last
    # input that is the value.
    order = {w: i for i, (_, w) in enumerate(tape.kept)}
    for v in [v for v, _ in reversed(tape.kept)] + tape.leaves:
        if v.grad is None or not bool(torch.isnan(v.grad).any()):
            continue
        uses = [(w, node) for node, w in place.items()
                if any(n is not None and (n is v.grad_fn or getattr(n, "variable", None) is v)
                       for n, _ in node.next_functions)]
        if uses:
            w, node = min(uses, key=lambda use: order.get(use[0]))
            k = max(k for k, (n, _) in enumerate(node.next_functions)
                    if n is not None and (n is v.grad_fn or getattr(n, "variable", None) is v))
            return w, (node, k, v.grad, True)
    return None, None


def _on_last_tape(v):
    return _is_tensor(v) and _tape[0] is not None and getattr(v, "_tape_number", None) == _tape[0].number


def _on_the_tape(v, name, builtin, where=None, local=False):
    """The checks of `builtin` (`Blame`, `Nudge`, `CheckBlame`) of the
    variable `name`, which holds `v`, in tapec's order and words: the tape
    has closed and recorded `v`. A value not on it is a number `Nudge`
    made, or was assigned again since (a value of that name is on the
    tape), or no tape has run yet; a routine's own variable (`local`) is
    not the one a tape at another depth of calls recorded."""
    tape = _tape[0]
    if tape is not None and tape.open:
        raise TapeError(where, f"{builtin} cannot be used inside a tape")
    if _on_last_tape(v):
        return
    if (tape is not None and name in tape.nudged and tape.nudged[name] is v) \
            or getattr(v, "_nudged_on", None) == _tapes[0]:
        raise TapeError(where, f"`{name}` was already nudged after the last tape")
    numeric = _number(v) or _is_matrix(v)
    elsewhere = local and tape is not None and tape.depth != _depth[0]
    if numeric and not elsewhere and tape is not None and name in tape.names:
        raise TapeError(where, f"`{name}` has been assigned again since the last tape")
    if numeric and tape is None:
        raise TapeError(where, f"`{builtin}({name})` needs a tape, but no tape has run yet")
    raise TapeError(where, f"`{name}` is not on the last tape")


def _blame_of(v):
    """The blame of `v`, a value on the last tape: zero where the result
    does not depend on it; a Real for a number."""
    import torch
    g = v.grad if v.grad is not None else torch.zeros_like(v)
    return float(g) if g.dim() == 0 else g.detach().clone()


def blame(v, name, where=None, local=False):
    """`Blame(x)`: the blame of the value `x` holds."""
    _on_the_tape(v, name, "Blame", where, local)
    return _blame_of(v)


# The counters of the top-level `for` loops running now whose global a
# routine nudges: tapec refuses such a `Nudge` while its loop runs.
_counting = []


def counting(name, turns):
    """A top-level `for` loop's turns, its counter `name` noted while they
    run (a `break` ends them too), for `nudge`."""
    _counting.append(name)
    try:
        yield from turns
    finally:
        _counting.pop()


def nudge(v, name, rate, declared=None, where=None, shared=False, local=False,
          integer_parameter=False):
    """`Nudge(x, rate)`: x - rate * Blame(x), once per value and tape; a
    variable declared Integer (`declared`, or for a `var` parameter the
    declared type and name of the caller's variable it names and the
    caller's `var` parameter declared Integer it was passed on through,
    or the parameter's own annotation, `integer_parameter`) cannot take
    the Real it makes, and a
    routine's global (`shared`) cannot be a running loop's counter."""
    _on_the_tape(v, name, "Nudge", where, local)
    if shared and name in _counting:
        raise TapeError(where, f"`{name}` is the counter of a `for` loop that is running: Nudge cannot change it")
    rate = _number_arg(rate, "Nudge", 2, where)
    kind, caller, by = declared if type(declared) is tuple else (declared, None, None)
    if kind == "Integer" and caller in (None, name):
        raise TapeError(where, f"Nudge would make `{name}` a Real, but it is declared Integer")
    if kind == "Integer":
        raise TapeError(where, f"Nudge would make `{name}` a Real, but it names the caller's "
                               f"`{caller}`, which is declared Integer")
    if integer_parameter:
        raise TapeError(where, f"Nudge would make `{name}` a Real, but it is declared Integer")
    if by is not None:
        raise TapeError(where, f"Nudge would make `{name}` a Real, but `{by[1]}`'s `var` "
                               f"parameter `{by[0]}`, declared Integer, names it")
    g = _blame_of(v)
    new = float(v) - float(rate) * g if v.dim() == 0 else (v.detach() - float(rate) * g)
    if type(new) is float and new != new:
        raise TapeError(where, "Nudge made a NaN (not a number)")
    if type(new) is not float:
        _checked(new, where, "Nudge")
        new._nudged_on = _tapes[0]
    _tape[0].nudged[name] = new
    return new



# Matrices (LANGUAGE.md sections 3 and 6): tensors (float64 unless --dtype) of two
# dimensions. Row and column numbers are 1-based in the program and
# 0-based here; they are turned from one into the other in this section
# only.

def _torch():
    import torch
    return torch


# Where the script's tensors live and their precision, from its command
# line: `--device cpu` (or `cuda`, `cuda:1`, `mps`: what PyTorch has) and
# `--dtype float64` (the exact one, as tapec computes) or `float32`.
_options = {"device": "cpu", "dtype": "float64"}
DTYPES = ("float64", "float32")


def _made_as():
    """The dtype and device every matrix of the script is made with."""
    torch = _torch()
    return {"dtype": getattr(torch, _options["dtype"]), "device": torch.device(_options["device"])}


def _take_options(args):
    """`--device X` and `--dtype Y` (or `--device=X`) out of the command
    line; what is left is the program's own arguments, for ParamStr."""
    rest, i = [args[0]], 1
    while i < len(args):
        key, _, value = args[i].partition("=")
        if key in ("--device", "--dtype"):
            if not value:
                if i + 1 >= len(args):
                    sys.exit(f"{args[0]}: {key} needs a value")
                value, i = args[i + 1], i + 1
            _options[key[2:]] = value
        else:
            rest.append(args[i])
        i += 1
    if _options["dtype"] not in DTYPES:
        sys.exit(f"{args[0]}: --dtype is one of {', '.join(DTYPES)}, not {_options['dtype']}")
    return rest


def _counted(n, noun):
    return f"1 {noun}" if n == 1 else f"{n} {noun}s"


def _as_operand(v):
    """A number as torch takes it beside a tensor (a float), or the tensor."""
    return float(v) if type(v) in (int, float) else v


def _shape(v):
    return tuple(v.shape) if _is_matrix(v) else (1, 1)


def _broadcast(a, b):
    """The shape of `a op b` under the language's broadcasting, or None."""
    (ar, ac), (br, bc) = a, b

    def dim(x, y):
        return x if x == y else (y if x == 1 else (x if y == 1 else None))
    r, c = dim(ar, br), dim(ac, bc)
    if r is None or c is None:
        return None
    shape = (r, c)

    def stretches(x):
        return x in (shape, (1, 1), (1, c), (r, 1))
    return shape if stretches(a) and stretches(b) and shape in (a, b) else None


def _elementwise(a, b, where, verb, f, symbol):
    for v in (a, b):
        if not (_number(v) or _is_matrix(v)):
            raise TapeError(where, f"cannot {verb} {_kind(a)} and {_kind(b)}")
    if _is_matrix(a) and _is_matrix(b) and _broadcast(_shape(a), _shape(b)) is None:
        raise TapeError(where, f"cannot {verb} a %d×%d and a %d×%d" % (_shape(a) + _shape(b)))
    out = f(_as_operand(a), _as_operand(b))
    # Two plain numbers (`Hadamard(2, 3)`) give a plain Real.
    return _checked(out, where, symbol, a, b) if _is_tensor(out) else _real(out, where, symbol)


def matrix(rows, where=None):
    """A matrix literal: rows of numbers, all of one length."""
    torch = _torch()
    width = len(rows[0])
    for i, row in enumerate(rows):
        if len(row) != width:
            raise TapeError(where, f"row {i + 1} has {len(row)} elements but row 1 has {width}")
        for x in row:
            if not _number(x):
                raise TapeError(where, f"a matrix holds numbers, not {_kind(x)}")
    if any(_is_tensor(x) for row in rows for x in row):
        return torch.stack([torch.stack([torch.as_tensor(float(x) if type(x) in (int, float) else x,
                                                         **_made_as()) for x in row]) for row in rows])
    return torch.tensor([[float(x) for x in row] for row in rows], **_made_as())


def _index(n, count, what, where=None):
    if not _integer(n):
        this = f"the Real {real(_value(n))}" if _number(n) else _kind(n)
        raise TapeError(where, f"a {what} number must be an Integer, but this is {this}")
    n = _int(n)
    if n == 0:
        raise TapeError(where, f"0 is not a {what} number: they start at 1")
    if n < 0 or n > count:
        there = "there is" if count == 1 else "there are"
        raise TapeError(where, f"{what} {n} is out of range: {there} {_counted(count, what)}")
    return n - 1


def _matrix_arg(m, where, name, position=1):
    """Argument `position` of the builtin `name`, which must be a matrix."""
    if not _is_matrix(m):
        raise _arg_error(m, name, position, where)
    return m


def _real_of(t):
    """A 0-d result: kept a tensor on a tape (its blame flows), a float off it."""
    return t if t.requires_grad else float(t)


def element(m, i, j, where=None):
    """`m[i, j]`, a Real."""
    if not _is_matrix(m):
        raise TapeError(where, f"only a matrix can be indexed, but this is {_kind(m)}")
    r = _index(i, m.shape[0], "row", where)
    c = _index(j, m.shape[1], "column", where)
    return _real_of(m[r, c])


def set_element(m, i, j, x, name, where=None, through_var=None):
    """`name[i, j] := x`, where `name` holds `m`: a new matrix; a copy of
    `m` elsewhere keeps its value. Checked in tapec's order: the element,
    then the variable, then the indices. `through_var`: `name` is the
    running routine's `var` parameter of that number (from 0, among its
    `var` parameters); while it holds the value it was given, the
    caller's variable holds it too (see `_held_once`)."""
    if _tape[0] is not None and _tape[0].open:
        raise TapeError(where, "an element cannot be changed inside a tape")
    if not _number(x):
        raise TapeError(where, f"a matrix element must be a number, but this is {_kind(x)}")
    if not _is_matrix(m):
        raise TapeError(where, f"`{name}` is {_kind(m)}, not a matrix")
    r = _index(i, m.shape[0], "row", where)
    c = _index(j, m.shape[1], "column", where)
    given = _var_given[-1] if through_var is not None and _var_given else ()
    passed = through_var is not None and through_var < len(given) and given[through_var] is m
    if not _held_once(_holders(m), passed):
        m = m.detach().clone()
    elif hasattr(m, "_nudged_on"):
        # Changed in place, the value is no longer the one `Nudge` made.
        del m._nudged_on
    m[r, c] = float(x)
    return m


def _holders(m):
    """How many references `m` has here, and its storage has: called as
    `set_element` calls it, one call down from the variable's holder."""
    import torch
    try:
        storage = torch._C._storage_Use_Count(m.untyped_storage()._cdata)
    except (AttributeError, RuntimeError):
        return None
    return sys.getrefcount(m), storage, m.requires_grad


def _calibrated(m):
    return _holders(m)


_HELD_ONCE = []


def _held_once(holders, through_var=False):
    """Whether the matrix `set_element` was given is held by its variable
    alone (no other name, no view of its storage, not on a tape), so that
    changing it in place changes nothing else: then `m[i, j] := x` in a
    loop takes time in proportion to the loop, not the loop times the
    matrix. Through a `var` parameter that still holds the value it was
    given (`through_var`), the caller's variable holds it as well, and the
    routine's call on the way: it gets the new matrix when the routine
    returns (and the holders of a value the parameter was given later, a
    local's or a global's, are not the caller's). The counts of a matrix held
    once are found by trying, so that any Python gives its own, the second
    through a routine's call as the export writes it; where a second name
    or a view did not raise them, every element set copies, as before."""
    import torch
    if not _HELD_ONCE:
        alone = torch.zeros(1, 1)
        once = _calibrated(alone)
        other = alone
        named = _calibrated(alone)
        del other
        view = alone.t()
        viewed = _calibrated(alone)
        del view

        @routine("_calibrated", ("m",), ("var",))
        def through(m):
            return _calibrated(m)
        # A call of its own: the program's depth and last `var` assigned
        # are left as they were.
        depth, last = _depth[0], _last_var[0]
        _depth[0] = 0
        try:
            passed = through(alone)
        finally:
            _depth[0], _last_var[0] = depth, last
        works = once is not None and named[0] > once[0] and viewed[1] > once[1]
        _HELD_ONCE.append((once[:2], passed[:2]) if works and passed is not None else None)
    counts = _HELD_ONCE[0]
    if holders is None or counts is None or holders[2]:
        return False
    counts = counts[1 if through_var else 0]
    return holders[0] <= counts[0] and holders[1] <= counts[1]


def transpose(m, where=None):
    return _matrix_arg(m, where, "Transpose").t()


def sum_(m, where=None):
    m = _matrix_arg(m, where, "Sum")
    return _real_of(_checked(m.sum(), where, "Sum", m))


def mean(m, where=None):
    # Where the sum overflows though every value is finite, each value
    # over the count is summed instead, as tapec does.
    import torch
    t = _matrix_arg(m, where, "Mean")
    value = t.mean()
    if torch.isinf(value) and torch.isfinite(t).all():
        value = (t / t.numel()).sum()
    return _real_of(_checked(value, where, "Mean", t))


def row_sum(m, where=None):
    m = _matrix_arg(m, where, "RowSum")
    return _checked(m.sum(dim=1, keepdim=True), where, "RowSum", m)


def row_mean(m, where=None):
    import torch
    t = _matrix_arg(m, where, "RowMean")
    means = t.mean(dim=1, keepdim=True)
    over = torch.isinf(means) & torch.isfinite(t).all(dim=1, keepdim=True)
    if over.any():
        means = torch.where(over, (t / t.shape[1]).sum(dim=1, keepdim=True), means)
    return _checked(means, where, "RowMean", t)


def col_sum(m, where=None):
    m = _matrix_arg(m, where, "ColSum")
    return _checked(m.sum(dim=0, keepdim=True), where, "ColSum", m)


def row_softmax(m, where=None):
    torch = _torch()
    m = _matrix_arg(m, where, "RowSoftmax")
    dead = torch.isneginf(m).all(dim=1)
    if bool(dead.any()):
        raise TapeError(where, f"row {int(dead.nonzero()[0]) + 1} of RowSoftmax's input is all -Inf")
    return _checked(torch.softmax(m, dim=1), where, "RowSoftmax", m)


def hadamard(a, b, where=None):
    for k, v in enumerate((a, b)):
        if not (_number(v) or _is_matrix(v)):
            raise _arg_error(v, "Hadamard", k + 1, where)
    return _elementwise(a, b, where, "multiply elementwise", lambda x, y: x * y, "Hadamard")


def _unary(name, on_tensor, on_number, keeps_integers=False):
    """A recorded function of a number or a matrix; with `keeps_integers`
    (Abs, Sqr) an Integer's result is an Integer, recorded if it was."""
    def f(x, where=None):
        if not (_number(x) or _is_matrix(x)):
            raise _arg_error(x, name, 1, where)
        if _is_tensor(x):
            t = _checked(on_tensor(x), where, name, x)
            if keeps_integers and _integer(x):
                return _recorded_int(t, on_number(_int(x), where))
            return t
        return on_number(x, where)
    return f


tanh = _unary("Tanh", lambda t: t.tanh(), lambda x, w: math.tanh(float(x)))
sigmoid = _unary("Sigmoid", lambda t: t.sigmoid(), lambda x, w: 1.0 / (1.0 + exp(-float(x))))
relu = _unary("ReLU", lambda t: t.relu(), lambda x, w: max(float(x), 0.0))
exp = _unary("Exp", lambda t: t.exp(), exp)
log_ = _unary("Log", lambda t: t.log(), log_)
sqrt = _unary("Sqrt", lambda t: t.sqrt(), sqrt)
abs_ = _unary("Abs", lambda t: t.abs(), abs_, keeps_integers=True)
sqr = _unary("Sqr", lambda t: t * t, sqr, keeps_integers=True)


def row(m, i, where=None):
    m = _matrix_arg(m, where, "Row")
    r = _index(_int_arg(i, "Row", 2, where), m.shape[0], "row", where)
    return m[r:r + 1, :]


def col(m, j, where=None):
    m = _matrix_arg(m, where, "Col")
    c = _index(_int_arg(j, "Col", 2, where), m.shape[1], "column", where)
    return m[:, c:c + 1]


def rows(m, where=None):
    return int(_matrix_arg(m, where, "Rows").shape[0])


def cols(m, where=None):
    return int(_matrix_arg(m, where, "Cols").shape[1])


MAX_ELEMENTS = 1 << 28


def _size(rows, cols, where, name):
    """A matrix's size, checked in tapec's order: its rows and columns (an
    n×n one's `n` alone where `cols` is None) as plain ints."""
    sizes = []
    for k, n in enumerate((rows,) if cols is None else (rows, cols)):
        n = _int_arg(n, name, k + 1, where)
        if n < 1:
            raise TapeError(where, f"a matrix size must be at least 1, but this is {n}")
        sizes.append(n)
    rows, cols = sizes[0], sizes[-1]
    if rows * cols > MAX_ELEMENTS:
        raise TapeError(where, f"a {rows}×{cols} matrix is too large")
    return rows, cols


def zeros(r, c, where=None):
    r, c = _size(r, c, where, "Zeros")
    return _torch().zeros((r, c), **_made_as())


def ones(r, c, where=None):
    r, c = _size(r, c, where, "Ones")
    return _torch().ones((r, c), **_made_as())


def fill(r, c, x, where=None):
    r, c = _size(r, c, where, "Fill")
    if not _number(x):
        raise _arg_error(x, "Fill", 3, where)
    return _held(_torch().full((r, c), float(_value(x)), **_made_as()))


def eye(n, where=None):
    n, _ = _size(n, None, where, "Eye")
    return _torch().eye(n, **_made_as())


def causal_mask(n, where=None):
    n, _ = _size(n, None, where, "CausalMask")
    torch = _torch()
    return torch.triu(torch.full((n, n), -math.inf, **_made_as()), diagonal=1)


def randn(r, c, where=None):
    r, c = _size(r, c, where, "Randn")
    return _torch().tensor([[_rng.normal() for _ in range(c)] for _ in range(r)], **_made_as())


def random(r, c, where=None):
    r, c = _size(r, c, where, "Random")
    return _torch().tensor([[_rng.uniform() for _ in range(c)] for _ in range(r)], **_made_as())


def show_(m, where=None):
    write(show(_matrix_arg(m, where, "Show")))



def _row_values(m, where, name, position=1):
    """Argument `position` of the builtin `name`, a 1×n row: its values."""
    m = _matrix_arg(m, where, name, position)
    if m.shape[0] != 1:
        raise TapeError(where, f"{name} takes a 1×n row, but this is a %d×%d" % tuple(m.shape))
    return [float(x) for x in m.detach()[0].tolist()]


def _ids(m, limit, where, name, position, what, of):
    """Argument `position` of `name`, a 1×n row of whole numbers from 1 to
    `limit` (each a `what` of the `of`), made 0-based."""
    out = []
    for k, x in enumerate(_row_values(m, where, name, position)):
        if not math.isfinite(x) or x != math.floor(x):
            raise TapeError(where, f"{name}: element {k + 1} is {real(x)}, not a whole {what} number")
        if not 1 <= x <= limit:
            have = "have" if of.endswith("s") else "has"
            whats = what if limit == 1 else what + "s"
            raise TapeError(where, f"{name}: element {k + 1} is {real(x, 0)}, "
                            f"but the {of} {have} {limit} {whats}")
        out.append(int(x) - 1)
    return out


def power(a, p, where=None):
    p = _int(p)
    if _number(p) and _is_tensor(p):
        # An exponent on the tape is read as a plain number, as tapec reads
        # it: no blame reaches it.
        p = float(p.detach())
    if not _number(p) or _is_tensor(p):
        raise _arg_error(p, "Power", 2, where)
    if not (_number(a) or _is_matrix(a)):
        raise _arg_error(a, "Power", 1, where)
    if type(p) is int and abs(p) > 2**53:
        return _power_beyond(a, p, where)
    # A negative base to a finite power that is not whole is a NaN (an
    # error), -inf included, where pow gives an infinity or 0.
    whole = not math.isfinite(float(p)) or float(p) == math.floor(float(p))
    if _is_tensor(a):
        if math.isinf(float(p)):
            return _checked(_infinite_power().apply(a, float(p)), where, "Power", a)
        out = a ** float(p)
        if not whole:
            out = _torch().where(a < 0, math.nan, out)
        return _checked(out, where, "Power", a)
    a, p = float(a), float(p)
    if a == 0.0 and p < 0:
        # IEEE pow: an infinity, negative for -0 to an odd whole power.
        odd = whole and math.isfinite(p) and math.fmod(p, 2.0) != 0.0
        return math.copysign(math.inf, a) if odd else math.inf
    try:
        return _real(a ** p if a >= 0 or whole else math.nan, where, "Power")
    except OverflowError:
        return math.inf if a > 0 or math.fmod(p, 2.0) == 0.0 else -math.inf


_INFINITE_POWER = []


def _infinite_power():
    """`a ** p` for an infinite `p`, whose blame is tapec's: the blame
    times p·a^(p-1), and exactly 0 where a^(p-1) is 0 (`Power(0.5, Inf)`
    is 0 all around 0.5), where PyTorch's rule makes inf·0, a NaN."""
    if not _INFINITE_POWER:
        torch = _torch()

        class InfinitePower(torch.autograd.Function):
            @staticmethod
            def forward(ctx, a, p):
                ctx.save_for_backward(a)
                ctx.p = p
                return a ** p

            @staticmethod
            def backward(ctx, g):
                (a,) = ctx.saved_tensors
                below = a ** (ctx.p - 1)
                slope = torch.where(below == 0, torch.zeros_like(below), ctx.p * below)
                return g * slope, None

        _INFINITE_POWER.append(InfinitePower)
    return _INFINITE_POWER[0]


def _power_beyond(a, p, where):
    """`Power(a, p)` of an Integer `p` beyond 2^53, which a float holds
    rounded to an even number: the size from the float, the sign from the
    Integer's parity; its blame p·|a|^(p-1)·sign(a) with that sign."""
    odd = p % 2 == 1
    if _is_tensor(a):
        size = a.abs() ** float(p)
        out = _torch().where(_torch().signbit(a), -size, size) if odd else size
        return _checked(out, where, "Power", a)
    a = float(a)
    if abs(a) == 0.0:
        size = math.inf if p < 0 else 0.0
    else:
        try:
            size = abs(a) ** float(p)
        except OverflowError:
            size = math.inf
    return _real(-size if odd and math.copysign(1.0, a) < 0 else size, where, "Power")


def layer_norm(m, where=None):
    torch = _torch()
    m = _matrix_arg(m, where, "LayerNorm")
    # A row whose squares would overflow (values past about 1e150) is
    # normalised scaled down to a largest size of 1e3, where epsilon is
    # lost as it is in tapec's; every other row is divided by 1, exactly.
    size = m.detach().abs().amax(dim=1, keepdim=True)
    scale = torch.where(size > 1e150, size / 1e3, torch.ones_like(size))
    out = torch.nn.functional.layer_norm(m / scale, (m.shape[1],), eps=1e-5)
    return _checked(out, where, "LayerNorm", m)


def embed(table, ids, where=None):
    table = _matrix_arg(table, where, "Embed")
    rows = _ids(ids, table.shape[0], where, "Embed", 2, "row", "table")
    return table[_torch().tensor(rows, device=table.device)]


def cross_entropy(logits, targets, where=None):
    torch = _torch()
    logits = _matrix_arg(logits, where, "CrossEntropy")
    picked = _ids(targets, logits.shape[1], where, "CrossEntropy", 2, "column", "logits")
    if len(picked) != logits.shape[0]:
        raise TapeError(where, "CrossEntropy needs one target per row of logits, but the logits "
                        "are a %d×%d and the targets a 1×%d" % (tuple(logits.shape) + (len(picked),)))
    index = torch.tensor(picked, device=_made_as()["device"])
    if bool(torch.isposinf(logits).any()):
        # tapec takes each row's largest logit from the row: inf - inf.
        raise TapeError(where, "CrossEntropy made a NaN (not a number)")
    lse = torch.logsumexp(logits, dim=1)
    loss = (lse - logits[torch.arange(len(picked)), index]).mean()
    return _real_of(_checked(loss, where, "CrossEntropy", logits))


def _range(m, first, count, size, what, where, name):
    """`first` and `count` of RowRange or ColRange, checked in tapec's
    order and words, as a 0-based slice's ends."""
    start = _index(_int_arg(first, name, 2, where), size, what, where)
    count = _int_arg(count, name, 3, where)
    if count < 1 or count > size - start:
        raise TapeError(where, f"{name} cannot take {count} {what}s from {what} {start + 1}: "
                        f"the matrix has {size} {what}{'' if size == 1 else 's'}")
    return start, start + count


def row_range(m, first, count, where=None):
    m = _matrix_arg(m, where, "RowRange")
    a, b = _range(m, first, count, m.shape[0], "row", where, "RowRange")
    return m[a:b, :]


def col_range(m, first, count, where=None):
    m = _matrix_arg(m, where, "ColRange")
    a, b = _range(m, first, count, m.shape[1], "column", where, "ColRange")
    return m[:, a:b]


def _stacked(a, b, where, name, dim):
    """`HStack(a, b)` (`dim` 1) or `VStack(a, b)` (`dim` 0)."""
    a, b = _matrix_arg(a, where, name, 1), _matrix_arg(b, where, name, 2)
    same = 1 - dim
    if a.shape[same] != b.shape[same]:
        what = "rows" if dim == 1 else "columns"
        raise TapeError(where, f"{name} needs both sides to have the same number of {what}, "
                        "but got a %d×%d and a %d×%d" % (tuple(a.shape) + tuple(b.shape)))
    return _torch().cat([a, b], dim=dim)


def hstack(a, b, where=None):
    return _stacked(a, b, where, "HStack", 1)


def vstack(a, b, where=None):
    return _stacked(a, b, where, "VStack", 0)


def sample(p, where=None):
    """`Sample(p)`: one uniform times the row's sum; the first column whose
    running sum exceeds it (the last if none)."""
    weights = _row_values(p, where, "Sample")
    for k, w in enumerate(weights):
        if w < 0:
            raise TapeError(where, f"Sample's weights must not be negative, but column {k + 1} is {real(w)}")
    total = 0.0
    for w in weights:
        total += w
    if not (total > 0 and math.isfinite(total)):
        raise TapeError(where, "Sample's weights must have a positive, finite sum")
    return _held(_rng.pick(weights, total))


def argmax(a, where=None):
    values = _row_values(a, where, "Argmax")
    best = 0
    for k, x in enumerate(values):
        if x > values[best]:
            best = k
    return _held(best + 1)


def vocab(text, where=None):
    return "".join(sorted(set(_str_arg(text, "Vocab", 1, where))))


def encode(text, vocabulary, where=None):
    text = _str_arg(text, "Encode", 1, where)
    vocabulary = _str_arg(vocabulary, "Encode", 2, where)
    if not text:
        raise TapeError(where, "Encode of an empty string: there are no empty matrices")
    position = {c: k + 1 for k, c in reversed(list(enumerate(vocabulary)))}
    ids = []
    for c in text:
        if c not in position:
            raise TapeError(where, f"the character {_literal(c)} is not in the vocabulary")
        ids.append(float(position[c]))
    return _torch().tensor([ids], **_made_as())


def decode(ids, vocabulary, where=None):
    vocabulary = _str_arg(vocabulary, "Decode", 2, where)
    picked = _ids(ids, len(vocabulary), where, "Decode", 1, "character", "vocabulary")
    _string_fits([vocabulary[k] for k in picked], where)
    return "".join(vocabulary[k] for k in picked)


def _path(path):
    """A path as the program names it: relative to the folder `run` was
    given (the program's folder), from the script's."""
    if _base[0] is None:
        _base[0] = os.path.dirname(os.path.abspath(sys.argv[0]))
    return path if os.path.isabs(path) else os.path.join(_base[0], path)


def _named(path, shown=True):
    """The file at `path` as tapec's messages name it: joined to the
    program's folder as tapec was given it (`tests/errors/no/such.txt` for
    `tests/errors/x.tape`), when that is still the program's folder from
    the current one; else joined to the program's folder's path from the
    current one, or to its absolute path if tapec was given one. `shown`:
    without the current folder's `./`, as tapec's errors show it (its
    `Plot wrote` keeps it)."""
    given, folder = _folder_as_given[0], os.path.dirname(_path("x"))
    try:
        same = given is not None and os.path.samefile(given, folder)
    except OSError:
        same = False
    if not same:
        try:
            absolute = given is not None and os.path.isabs(given)
            given = os.path.abspath(folder) if absolute else os.path.relpath(folder)
        except ValueError:  # no relative path, as between drives
            given = os.path.abspath(folder)
    full = os.path.join(given, path)
    return _without_current(full) if shown else full


def _without_current(full):
    """`full` without a first `./`, as Rust's `strip_prefix(".")` gives it
    (tapec's `shown`): the `.` and empty parts at either end go too, and
    the current folder itself is `.`."""
    if not (full == "." or full.startswith("./")):
        return full
    parts = full.split("/")[1:]
    while parts and parts[0] in ("", "."):
        parts.pop(0)
    while parts and parts[-1] in ("", "."):
        parts.pop()
    return "/".join(parts) or "."


def _io_reason(e):
    """Why a file could not be read, in tapec's words (the system's own,
    as Rust says them, for the rarer reasons)."""
    if isinstance(e, FileNotFoundError):
        return "no such file"
    if isinstance(e, PermissionError):
        return "permission denied"
    if isinstance(e, IsADirectoryError):
        return "it is a folder, not a file"
    return f"{e.strerror} (os error {e.errno})" if e.strerror else str(e)


def _io_write_reason(e, path):
    """Why the file `path` could not be written, in tapec's words: a file
    not found is said of its folder when that is missing."""
    if path.endswith("/"):
        return "it is a folder, not a file" if os.path.isdir(path) else \
            "a name ending in `/` is a folder's, not a file's"
    if isinstance(e, NotADirectoryError):
        return "a part of its folder's path is a file, not a folder"
    if isinstance(e, FileNotFoundError):
        folder = os.path.dirname(path) or "."
        return "no file can be made there" if os.path.isdir(folder) else "its folder does not exist"
    return _io_reason(e)


def _read_bytes(path, where, name):
    """The bytes of the file at `path` (as the program names it), for the
    builtin `name`."""
    if not path:
        raise TapeError(where, f"{name} needs a file's name, but the path is empty")
    try:
        with open(_path(path), "rb") as f:
            return f.read()
    except OSError as e:
        raise TapeError(where, f"cannot read `{_named(path)}`: {_io_reason(e)}")


def read_text(path, where=None):
    data = _read_bytes(_str_arg(path, "ReadText", 1, where), where, "ReadText")
    try:
        # The text as it is in the file, \r\n and \r kept; a byte-order
        # mark is no character of it, as for a program and `Load`.
        text = data.decode("utf-8")
        return text[1:] if text.startswith("\ufeff") else text
    except UnicodeDecodeError as e:
        raise TapeError(where, f"`{path}` is not UTF-8 text (a bad byte at offset {e.start})")


def _shortest(x):
    """A number as `Save` writes it: the shortest decimal that reads back
    to the same bits, with Rust's exponent form (`1e-7`, `1e16`)."""
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    text = repr(x)
    if "e" in text:
        mantissa, exponent = text.split("e")
        text = mantissa + "e" + str(int(exponent))
    return text


# The program's own file (see `run`).
_program_file = [None]


def save(m, path, where=None):
    if _replaying[0] is not None:
        return  # tapec's replay runs the recorded operations only
    m = _matrix_arg(m, where, "Save", 1)
    path = _str_arg(path, "Save", 2, where)
    program, target = _program_file[0], _path(path)
    if not path or os.path.isdir(target):
        what = "the path is empty" if not path else f"`{path}` is a folder"
        raise TapeError(where, f"Save needs a file's name, but {what}")
    if program and os.path.exists(program) and os.path.exists(target) and os.path.samefile(target, program):
        raise TapeError(where, f"Save would write over the program itself, `{path}`")
    if os.path.exists(target) and not os.path.isfile(target) and not os.path.isdir(target):
        raise TapeError(where, f"Save writes files, but `{path}` is not a file (a pipe or a device)")
    text = "".join(" ".join(_shortest(x) for x in row) + "\n" for row in _rows(m))
    # A read-only file stays as it is, for root too, as in tapec.
    if os.path.isfile(target) and not os.stat(target).st_mode & 0o222:
        raise TapeError(where, f"cannot write `{_named(path)}`: permission denied")
    try:
        with open(_path(path), "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        raise TapeError(where, f"cannot write `{_named(path)}`: {_io_write_reason(e, target)}")


def _real_number(token):
    """A number as `StrToFloat` and `Load` read it (src/eval/files.rs,
    `real_number`): digits with a sign, dot and exponent, or `inf` (or
    `Inf`, as the language spells it). Gives the number and None, or None
    and what else the token is: not a number, or digits too large for a
    Real, which are not read as infinity."""
    if token in ("inf", "-inf", "+inf", "Inf", "-Inf", "+Inf"):
        return math.copysign(math.inf, -1.0 if token.startswith("-") else 1.0), None
    if token and all(c in "0123456789+-.eE" for c in token):
        try:
            x = float(token)
        except ValueError:
            return None, "is not a number"
        if math.isinf(x):
            return None, "is too large in size for a Real, which is at most about 1.797e308"
        if not math.isnan(x):
            return x, None
    return None, "is not a number"


_DEBUG_ESCAPES = {"\0": "\\0", "\t": "\\t", "\r": "\\r", "\n": "\\n",
                  "\\": "\\\\", "'": "\\'", '"': '\\"'}


def _escape_debug(text):
    """`text` as Rust's `str::escape_debug` writes it: `\\`, quotes and
    `\\n` escaped, a character that does not print (a control, a format
    character, a space other than ' ') as `\\u{a0}`, and so is a first
    character that extends the one before it (a combining accent)."""
    import unicodedata
    out = []
    for n, c in enumerate(text):
        if c in _DEBUG_ESCAPES:
            out.append(_DEBUG_ESCAPES[c])
        elif not c.isprintable() or (n == 0 and unicodedata.category(c) in ("Mn", "Me")):
            out.append("\\u{%x}" % ord(c))
        else:
            out.append(c)
    return "".join(out)


def _clipped(token):
    """A token's first 40 characters and `...`, as tapec shows a long one."""
    return token[:40] + "..." if len(token) > 40 else token


def load(path, where=None):
    """`Load(path)`: rows of numbers separated by spaces or tabs, refused as
    tapec refuses them (src/eval/files.rs)."""
    # Bytes that are not UTF-8 are read as U+FFFD, as tapec reads them.
    text = _read_bytes(_str_arg(path, "Load", 1, where), where, "Load").decode("utf-8", "replace")
    # A byte-order mark, which some editors write first, is not a number.
    text = text[1:] if text.startswith("\ufeff") else text

    def refuse(line, column, why):
        raise TapeError(where, f"`{path}` is not a matrix: line {line}, column {column}: {why}")
    rows, width, blank = [], None, None
    for i, line in enumerate(text.split("\n")):
        line = line[:-1] if line.endswith("\r") else line
        tokens, k = [], 0
        while k < len(line):
            if line[k] in " \t":
                k += 1
                continue
            start = k
            while k < len(line) and line[k] not in " \t":
                k += 1
            tokens.append((start + 1, line[start:k]))
        if not tokens:
            if blank is None:
                blank = i + 1
            continue
        if blank is not None and rows:
            refuse(blank, 1, "a blank line between rows")
        blank = None
        row = []
        for n, (column, token) in enumerate(tokens):
            if width is not None and n == width:
                refuse(i + 1, column, f"row {len(rows) + 1} has more numbers than the {width} of row 1")
            x, what = _real_number(token)
            if x is None:
                refuse(i + 1, column, f"`{_escape_debug(_clipped(token))}` {what}")
            row.append(x)
        if width is not None and len(row) < width:
            plural = "" if len(row) == 1 else "s"
            refuse(i + 1, len(line) + 1, f"row {len(rows) + 1} has {len(row)} number{plural}, row 1 has {width}")
        width = len(row) if width is None else width
        rows.append(row)
    if not rows:
        refuse(1, 1, "the file holds no numbers")
    return _torch().tensor(rows, **_made_as())


_bar = [None]


def progress(step, steps, where=None):
    """`Progress`: tqdm's bar on stderr when stderr is a terminal and tqdm
    is installed; nothing otherwise."""
    step, steps = _int_arg(step, "Progress", 1, where), _int_arg(steps, "Progress", 2, where)
    if not sys.stderr.isatty() or steps <= 0:
        return
    step = min(max(step, 0), steps)
    if _bar[0] is None or _bar[0].total != steps or step < _bar[0].n:
        try:
            from tqdm import tqdm
        except ImportError:
            return
        if _bar[0] is not None:
            _bar[0].close()
        _bar[0] = tqdm(total=steps, unit="step", leave=True)
    _bar[0].update(step - _bar[0].n)
    if step >= steps:
        _bar[0].close()
        _bar[0] = None


def _f32(x):
    """`x` rounded to single precision, as Rust's `as f32` (too large: an
    infinity)."""
    try:
        return struct.unpack("f", struct.pack("f", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


def _scaled(x, domain, span):
    """`x` from `domain` onto 0..`span`, clamped, in single precision (as
    the braille chart's scale computes it)."""
    start, end = domain
    num, den = _f32(x - start), _f32(end - start)
    if den == 0.0:
        p = math.nan if num == 0.0 or num != num else math.copysign(math.inf, num)
    else:
        p = _f32(num / den)
    r = _f32(p * span)
    return min(0.0 if r != r else max(r, 0.0), span)


def _tick(v):
    """A value on the braille chart's y axis, as tapec labels it: three
    significant digits where one decimal would hide them."""
    size = abs(v)
    if size == 0.0 or 1.0 <= size < 1e6:
        return "%.1f" % v
    if 1e-3 <= size < 1.0:
        return "%.*f" % (int(2.0 - math.floor(_f32(math.log10(size)))), v)
    mantissa, exponent = ("%.2e" % v).split("e")
    return f"{mantissa}e{int(exponent)}"


def _braille(rows, title):
    """The chart tapec draws in braille characters for a `Plot` with no
    path: 120 by 40 dots, each row of the matrix a line against its column
    number, in single precision (as tapec's chart, textplots on drawille,
    draws it), with the lines below that tapec prints."""
    width, height = 120, 40
    columns = len(rows[0])
    left, right = (0.5, 1.5) if columns == 1 else (1.0, _f32(columns))
    points = [[(_f32(_f32(k) + 1.0), _f32(v)) for k, v in enumerate(row) if math.isfinite(_f32(v))]
              for row in rows]
    finite = [v for row in points for _, v in row]
    lo, hi = (min(finite), max(finite)) if finite else (math.inf, -math.inf)
    if lo == hi:
        pad = max(_f32(abs(lo) * _f32(0.05)), 0.5)
        bottom = max(_f32(lo - pad), -3.4028234663852886e38)
        top = min(_f32(hi + pad), 3.4028234663852886e38)
    else:
        # The range of what is drawn; a row with nothing to draw counts as 0.
        bottom, top = math.inf, -math.inf
        for row in points:
            ys = [v for _, v in row]
            # The first of equal least values and the last of equal
            # greatest ones, as textplots takes them (0 and -0 differ in
            # the label).
            bottom = min(bottom, min(ys) if ys else 0.0)
            top = max(top, max(reversed(ys)) if ys else 0.0)
    dots = {}

    def dot(x, y):
        cell = (x // 2, y // 4)
        dots[cell] = dots.get(cell, 0) | (0x01, 0x08, 0x02, 0x10, 0x04, 0x20, 0x40, 0x80)[y % 4 * 2 + x % 2]

    def line(x1, y1, x2, y2):
        xdiff, ydiff = abs(x1 - x2), abs(y1 - y2)
        xdir, ydir = (1 if x1 <= x2 else -1), (1 if y1 <= y2 else -1)
        r = max(xdiff, ydiff)
        for i in range(r + 1):
            dot(x1 + (i * xdiff // r * xdir if xdiff else 0), y1 + (i * ydiff // r * ydir if ydiff else 0))

    if bottom <= 0.0 <= top:
        # The x axis, dotted, where the value is 0.
        j = int(_scaled(0.0, (bottom, top), float(height)))
        for i in range(0, width + 1, 3):
            dot(i, height - j)
    for row in points:
        placed = []
        for x, y in row:
            i = int(_round_half_away(_scaled(x, (left, right), float(width))))
            j = int(_round_half_away(_scaled(y, (bottom, top), float(height))))
            if i <= width and j <= height:
                placed.append((i, height - j))
        if len(row) == 1:
            for x, y in placed:
                dot(x, y)
        else:
            for (x1, y1), (x2, y2) in zip(placed, placed[1:]):
                line(x1, y1, x2, y2)
    text = title + "\n" if title else ""
    if lo <= hi:
        last_x = max([width // 2] + [x for x, _ in dots])
        last_y = max([height // 4] + [y for _, y in dots])
        lines = ["".join(chr(0x2800 + dots.get((x, y), 0)) for x in range(last_x + 1))
                 for y in range(last_y + 1)]
        lines[0] += " " + _tick(top)
        lines[-1] += " " + _tick(bottom)
        chart = "\n".join(lines)
        if columns > 1:
            first, last = "%.1f" % left, "%.1f" % right
            chart += "\n" + first.ljust(width // 2 - len(last)) + last
        text += chart + "\n"
    text += "x: column 1\n" if columns == 1 else f"x: column 1 to {columns}\n"
    values = [v for row in rows for v in row]
    infinite = sum(1 for v in values if math.isinf(v))
    if infinite:
        text += f"({infinite} infinite value{'' if infinite == 1 else 's'} left out)\n"
    too_large = sum(1 for v in values if math.isfinite(v) and not math.isfinite(_f32(v)))
    if too_large:
        text += (f"({too_large} value{'' if too_large == 1 else 's'} too large to draw here "
                 "left out; Plot(m, 'chart.svg') draws it to scale)\n")
    too_small = sum(1 for v in values if v != 0.0 and abs(_f32(v)) < 1.1754943508222875e-38)
    if too_small:
        text += (f"({too_small} value{'' if too_small == 1 else 's'} too small to draw here "
                 "drawn as 0; Plot(m, 'chart.svg') draws it to scale)\n")
    return text


def plot(m, path="", title="", where=None):
    """`Plot`: each row of `m` as a line. With no path, the chart tapec
    draws in braille characters, printed; with one, an SVG drawn by
    matplotlib when it is installed (a clear message when not)."""
    if _replaying[0] is not None:
        return  # tapec's replay runs the recorded operations only
    # Its arguments' kinds first, in order, as tapec's call checks them.
    _matrix_arg(m, where, "Plot")
    _str_arg(path, "Plot", 2, where)
    _str_arg(title, "Plot", 3, where)
    if not path:
        write(_braille(_rows(_matrix_arg(m, where, "Plot")), title))
        return
    if not path.lower().endswith(".svg"):
        raise TapeError(where, f"Plot draws SVG, but `{path}` names another kind of file")
    target = _path(path)
    folder = os.path.dirname(target)
    if not os.path.isdir(folder):
        # Refused before matplotlib is needed, as writing there would be.
        try:
            os.listdir(folder)
        except OSError as e:
            raise TapeError(where, f"cannot write `{_named(path)}`: {_io_write_reason(e, target)}")
    try:
        import matplotlib
        matplotlib.use("svg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.stderr.write("Plot needs matplotlib, which is not installed (pip install matplotlib)\n")
        return
    figure, axes = plt.subplots()
    for row in _rows(_matrix_arg(m, where, "Plot")):
        # One column has no line: its value is a dot, as in tapec's chart.
        axes.plot(range(1, len(row) + 1), row, marker="o" if len(row) == 1 else None)
    axes.set_xlabel("column")
    if title:
        axes.set_title(title)
    try:
        figure.savefig(target, format="svg")
    except OSError as e:
        raise TapeError(where, f"cannot write `{_named(path)}`: {_io_write_reason(e, target)}")
    sys.stderr.write(f"Plot wrote {_named(path, shown=False)}\n")


def _replay(tape, name, value, py=None):
    """The tape's result with `name` holding `value`: the block run again
    with nothing recorded and nothing printed, in float64 whatever the
    script's --dtype (finite differences need the digits)."""
    torch = _torch()
    scope = tape.scope
    kept = dict(scope)
    scope.clear()
    scope.update(tape.started)
    dtype = _options["dtype"]
    for key, v in tape.started.items():
        if _is_tensor(v) and v.is_floating_point():
            scope[key] = v.double()
            if _integer(v) and scope[key] is not v:
                _recorded_int(scope[key], v._int)
    # A variable the block never assigned is nudged where the block starts
    # (under its Python name, `py`); one it did, at its last assignment.
    py = name if py is None else py
    if name not in tape.assigned and py in scope:
        scope[py] = value
    _replaying[0] = (name, value)
    _replay_result[0] = None
    tape.seen.clear()
    tape.replay_assigned = {}
    _rng.state = tape.rng_state
    _options["dtype"] = "float64"
    try:
        with torch.no_grad():
            tape.replay()
        return float(_replay_result[0])
    finally:
        _options["dtype"] = dtype
        _replaying[0] = None
        scope.clear()
        scope.update(kept)


def check_blame(x, name, where=None, local=False, py=None):
    """`CheckBlame(x)`: the largest difference between `Blame(x)` and central
    finite differences (step 1e-6), from replaying the last tape with each
    element of `x` nudged."""
    torch = _torch()
    tape = _tape[0]
    _on_the_tape(x, name, "CheckBlame", where, local)
    b = _blame_of(x)
    base = x.detach().clone().double()
    flat = base.reshape(-1)
    grads = [b] if base.dim() == 0 else b.reshape(-1).tolist()
    state = _rng.state
    worst = 0.0
    for k in range(flat.numel()):
        results = []
        for step in (1e-6, -1e-6):
            nudged = flat.clone()
            nudged[k] += step
            value = nudged.reshape(base.shape)
            try:
                results.append(_replay(tape, name, float(value) if base.dim() == 0 else value, py))
            except TapeError as e:
                # A nudge out of an operation's domain: tapec names the
                # operation, at CheckBlame.
                made = e.message.split(" made a NaN", 1)
                if len(made) < 2:
                    raise
                if made[0].strip("`") not in ("Sqrt", "Log", "Power", "/"):
                    # Any other operation's NaN comes of an infinity.
                    raise TapeError(where, f"CheckBlame made a NaN (not a number){_nan_at(base.shape, k)}") from None
                said = "1e-6" if step > 0 else "-1e-6"
                raise TapeError(
                    where,
                    f"CheckBlame made a NaN (not a number){_nan_at(base.shape, k)}: "
                    f"nudged by {said}, this value gives `{made[0].strip('`')}` a NaN",
                ) from None
        difference = abs(float(grads[k]) - (results[0] - results[1]) / 2e-6)
        if difference != difference:
            raise TapeError(where, f"CheckBlame made a NaN (not a number){_nan_at(base.shape, k)}")
        worst = max(worst, difference)
    _rng.state = state
    return worst
