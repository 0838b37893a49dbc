//! `math.eval`: arithmetic on numbers, parsed here; never an evaluation of code.
//!
//! Input: an expression such as `2 * (3 + 4) ^ 2 / sqrt(16)`. Output: a number (an
//! integer when the result is whole and exactly representable) or a [`MathError`] with
//! the 1-based character position of the problem.
//!
//! Grammar, loosest first: `+ -`, then `* / %`, then unary `-`/`+`, then `^` (right
//! associative, so `-2^2` is `-4` and `2^3^2` is `512`). Numbers: `12`, `1.5`, `.5`,
//! `1e-3`. Constants `pi`, `e`. Functions `sqrt abs round(x[, digits]) floor ceil
//! min(..) max(..) ln log10 exp sin cos tan`. Nesting is bounded so hostile input
//! cannot overflow the stack.

use serde_json::Value;

/// Longest expression accepted, in characters.
const MAX_LEN: usize = 10_000;
/// Deepest nesting of parentheses and unary signs.
const MAX_DEPTH: usize = 200;

/// Why an expression has no value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}{}", .position.map(|p| format!(" at position {p}")).unwrap_or_default())]
pub(crate) struct MathError {
    /// What is wrong.
    pub(crate) message: String,
    /// 1-based character position, when one place is to blame.
    pub(crate) position: Option<usize>,
}

/// Evaluates `input`.
pub(crate) fn evaluate(input: &str) -> Result<Value, MathError> {
    let chars: Vec<char> = input.chars().collect();
    if chars.len() > MAX_LEN {
        return Err(MathError {
            message: format!("expression is longer than {MAX_LEN} characters"),
            position: None,
        });
    }
    let mut parser = Parser { chars, at: 0, depth: 0 };
    let value = parser.expr()?;
    parser.skip_space();
    if let Some(c) = parser.peek() {
        return Err(parser.error_here(format!("unexpected `{c}`")));
    }
    if !value.is_finite() {
        return Err(MathError { message: "result is not a finite number".into(), position: None });
    }
    Ok(to_json(value))
}

fn to_json(value: f64) -> Value {
    #[allow(clippy::cast_possible_truncation)]
    if value.fract() == 0.0 && value.abs() < 9.007_199_254_740_992e15 {
        return Value::from(value as i64);
    }
    serde_json::Number::from_f64(value).map_or(Value::Null, Value::Number)
}

struct Parser {
    chars: Vec<char>,
    at: usize,
    depth: usize,
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn skip_space(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.at += 1;
        }
    }

    /// The next non-space character, consumed when it is `c`.
    fn eat(&mut self, c: char) -> bool {
        self.skip_space();
        if self.peek() == Some(c) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn error_at(at: usize, message: impl Into<String>) -> MathError {
        MathError { message: message.into(), position: Some(at + 1) }
    }

    fn error_here(&self, message: impl Into<String>) -> MathError {
        Self::error_at(self.at, message)
    }

    fn unexpected(&mut self, wanted: &str) -> MathError {
        self.skip_space();
        match self.peek() {
            Some(c) => self.error_here(format!("expected {wanted}, found `{c}`")),
            None => self.error_here(format!("expected {wanted}, found the end")),
        }
    }

    fn enter(&mut self) -> Result<(), MathError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.error_here(format!("nesting deeper than {MAX_DEPTH} levels")));
        }
        Ok(())
    }

    fn expr(&mut self) -> Result<f64, MathError> {
        let mut value = self.term()?;
        loop {
            if self.eat('+') {
                value += self.term()?;
            } else if self.eat('-') {
                value -= self.term()?;
            } else {
                return Ok(value);
            }
        }
    }

    fn term(&mut self) -> Result<f64, MathError> {
        let mut value = self.unary()?;
        loop {
            self.skip_space();
            let op_at = self.at;
            let Some(op @ ('*' | '/' | '%')) = self.peek() else {
                return Ok(value);
            };
            self.at += 1;
            let rhs = self.unary()?;
            value = match op {
                '*' => value * rhs,
                _ if rhs == 0.0 => return Err(Self::error_at(op_at, "division by zero")),
                '/' => value / rhs,
                _ => value % rhs,
            };
        }
    }

    fn unary(&mut self) -> Result<f64, MathError> {
        self.enter()?;
        let value = if self.eat('-') {
            -self.unary()?
        } else if self.eat('+') {
            self.unary()?
        } else {
            self.power()?
        };
        self.depth -= 1;
        Ok(value)
    }

    fn power(&mut self) -> Result<f64, MathError> {
        let base = self.primary()?;
        if self.eat('^') { Ok(base.powf(self.unary()?)) } else { Ok(base) }
    }

    fn primary(&mut self) -> Result<f64, MathError> {
        self.skip_space();
        match self.peek() {
            Some(c) if c.is_ascii_digit() || c == '.' => self.number(),
            Some(c) if c.is_alphabetic() || c == '_' => self.name(),
            Some('(') => {
                self.at += 1;
                self.enter()?;
                let value = self.expr()?;
                if !self.eat(')') {
                    return Err(self.unexpected("`)`"));
                }
                self.depth -= 1;
                Ok(value)
            }
            _ => Err(self.unexpected("a number, a name or `(`")),
        }
    }

    fn number(&mut self) -> Result<f64, MathError> {
        let start = self.at;
        let digits = |p: &mut Self| {
            while p.peek().is_some_and(|c| c.is_ascii_digit()) {
                p.at += 1;
            }
        };
        digits(self);
        if self.peek() == Some('.') {
            self.at += 1;
            digits(self);
        }
        if matches!(self.peek(), Some('e' | 'E'))
            && self
                .chars
                .get(self.at + 1)
                .is_some_and(|c| c.is_ascii_digit() || *c == '-' || *c == '+')
        {
            self.at += 2;
            digits(self);
        }
        let text: String = self.chars[start..self.at].iter().collect();
        text.parse::<f64>().map_err(|_| Self::error_at(start, format!("invalid number `{text}`")))
    }

    fn name(&mut self) -> Result<f64, MathError> {
        let start = self.at;
        while self.peek().is_some_and(|c| c.is_alphanumeric() || c == '_') {
            self.at += 1;
        }
        let name: String = self.chars[start..self.at].iter().collect();
        match name.as_str() {
            "pi" => return Ok(std::f64::consts::PI),
            "e" => return Ok(std::f64::consts::E),
            _ => {}
        }
        if !self.eat('(') {
            return Err(Self::error_at(start, format!("unknown name `{name}`")));
        }
        let mut args = Vec::new();
        if !self.eat(')') {
            loop {
                args.push(self.expr()?);
                if self.eat(')') {
                    break;
                }
                if !self.eat(',') {
                    return Err(self.unexpected("`,` or `)`"));
                }
            }
        }
        call(&name, &args).map_err(|m| Self::error_at(start, m))
    }
}

fn call(name: &str, args: &[f64]) -> Result<f64, String> {
    let one = |f: fn(f64) -> f64| match args {
        [x] => Ok(f(*x)),
        _ => Err(format!("`{name}` takes 1 argument, got {}", args.len())),
    };
    match name {
        "sqrt" if args.first().is_some_and(|x| *x < 0.0) => {
            Err("`sqrt` of a negative number".to_owned())
        }
        "ln" | "log10" if args.first().is_some_and(|x| *x <= 0.0) => {
            Err(format!("`{name}` of a number that is not positive"))
        }
        "sqrt" => one(f64::sqrt),
        "abs" => one(f64::abs),
        "floor" => one(f64::floor),
        "ceil" => one(f64::ceil),
        "ln" => one(f64::ln),
        "log10" => one(f64::log10),
        "exp" => one(f64::exp),
        "sin" => one(f64::sin),
        "cos" => one(f64::cos),
        "tan" => one(f64::tan),
        "round" => match args {
            [x] => Ok(x.round()),
            [x, digits] if digits.fract() == 0.0 && (0.0..=15.0).contains(digits) => {
                let scale = 10f64.powf(*digits);
                Ok((x * scale).round() / scale)
            }
            [_, _] => Err("`round` digits must be a whole number from 0 to 15".to_owned()),
            _ => Err(format!("`round` takes 1 or 2 arguments, got {}", args.len())),
        },
        "min" | "max" if args.is_empty() => Err(format!("`{name}` needs at least 1 argument")),
        "min" => Ok(args.iter().copied().fold(f64::INFINITY, f64::min)),
        "max" => Ok(args.iter().copied().fold(f64::NEG_INFINITY, f64::max)),
        _ => Err(format!("unknown function `{name}`")),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn ok(input: &str) -> Value {
        evaluate(input).unwrap_or_else(|e| panic!("{input}: {e}"))
    }

    fn err(input: &str) -> String {
        evaluate(input).unwrap_err().to_string()
    }

    #[test]
    fn arithmetic() {
        assert_eq!(ok("2+2"), json!(4));
        assert_eq!(ok("7 / 2"), json!(3.5));
        assert_eq!(ok("2 * (3 + 4) ^ 2 / sqrt(16)"), json!(24.5));
        assert_eq!(ok("-2^2"), json!(-4));
        assert_eq!(ok("2^3^2"), json!(512));
        assert_eq!(ok("2^-1"), json!(0.5));
        assert_eq!(ok("10 % 4"), json!(2));
        assert_eq!(ok("--3"), json!(3));
        assert_eq!(ok("1e3 + .5"), json!(1000.5));
        assert_eq!(ok("round(29.99 * 0.85, 2)"), json!(25.49));
        assert_eq!(ok("min(3, 1, 2) + max(4, abs(-9))"), json!(10));
        assert_eq!(ok("round(pi * 100, 1)"), json!(314.2));
        assert_eq!(ok("floor(e) + ceil(0.1)"), json!(3));
    }

    #[test]
    fn errors_have_positions() {
        assert_eq!(err("1 / 0"), "division by zero at position 3");
        assert_eq!(err("5 % (2 - 2)"), "division by zero at position 3");
        assert_eq!(err("2 +"), "expected a number, a name or `(`, found the end at position 4");
        assert_eq!(err("(1 + 2"), "expected `)`, found the end at position 7");
        assert_eq!(err("1 + 2)"), "unexpected `)` at position 6");
        assert_eq!(err("2 * foo"), "unknown name `foo` at position 5");
        assert_eq!(err("system(1)"), "unknown function `system` at position 1");
        assert_eq!(err("sqrt(-1)"), "`sqrt` of a negative number at position 1");
        assert_eq!(err("sqrt(1, 2)"), "`sqrt` takes 1 argument, got 2 at position 1");
        assert_eq!(err("10 ^ 400"), "result is not a finite number");
        assert_eq!(err(""), "expected a number, a name or `(`, found the end at position 1");
        assert_eq!(err("1 $ 2"), "unexpected `$` at position 3");
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let deep = "(".repeat(100_000);
        assert!(err(&deep).starts_with("expression is longer"));
        let deep = format!("{}1{}", "(".repeat(1000), ")".repeat(1000));
        assert!(err(&deep).starts_with("nesting deeper than 200 levels at position"));
        assert!(err(&"-".repeat(5000)).starts_with("nesting deeper"));
    }

    /// Fuzz-style: random strings over the grammar's alphabet never panic.
    #[test]
    fn never_panics_on_arbitrary_input() {
        const ALPHABET: &[&str] = &[
            "0", "1", "9", ".", "e", "E", "+", "-", "*", "/", "%", "^", "(", ")", ",", " ", "pi",
            "sqrt", "round", "min", "max", "ln", "x", "é", "∞", "\u{0}", "1e308", "(((",
        ];
        let mut rng = fastrand::Rng::with_seed(7);
        for _ in 0..20_000 {
            let len = rng.usize(0..40);
            let input: String = (0..len).map(|_| ALPHABET[rng.usize(..ALPHABET.len())]).collect();
            let _ = evaluate(&input);
        }
    }
}
