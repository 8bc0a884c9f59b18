//! Index expressions over the thread index `t`, as a learner writes them in a kernel:
//! `t*2`, `(t%4)*4`, `(t>>1)%4`, `t/16*17 + t%16`. Integer literals, `t`, parentheses and the
//! binary operators `* / % + - << >> & |` with C's precedence (tightest first: `* / %`, then
//! `+ -`, then `<< >>`, then `&`, then `|`), all left-associative, on 64-bit signed integers.

use std::fmt;

/// A parsed expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expr {
    /// The thread index.
    T,
    /// An integer literal.
    Lit(i64),
    /// A binary operation.
    Bin(Box<Expr>, Op, Box<Expr>),
}

/// A binary operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `*`
    Mul,
    /// `/` (truncating)
    Div,
    /// `%`
    Rem,
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `<<`
    Shl,
    /// `>>`
    Shr,
    /// `&`
    And,
    /// `|`
    Or,
}

/// Operators by precedence level, loosest first.
const LEVELS: [&[(&str, Op)]; 5] = [
    &[("|", Op::Or)],
    &[("&", Op::And)],
    &[("<<", Op::Shl), (">>", Op::Shr)],
    &[("+", Op::Add), ("-", Op::Sub)],
    &[("*", Op::Mul), ("/", Op::Div), ("%", Op::Rem)],
];

/// Why an expression does not parse or cannot be evaluated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExprError(pub String);

impl fmt::Display for ExprError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ExprError {}

/// The longest expression accepted, characters: the parser and the evaluator recurse once per
/// operator and per parenthesis, so the length bounds their depth (and the stack they use).
pub const MAX_LEN: usize = 1024;
/// The deepest nesting of parentheses accepted.
pub const MAX_NESTING: usize = 64;

struct Parser<'a> {
    text: &'a str,
    pos: usize,
    nesting: usize,
}

impl Parser<'_> {
    fn skip_space(&mut self) {
        while self.text[self.pos..].starts_with(char::is_whitespace) {
            self.pos += 1;
        }
    }

    fn error(&self, what: &str) -> ExprError {
        ExprError(format!(
            "`{}`: {what} at column {} (use t, integers, parentheses and * / % + - << >> & |)",
            self.text,
            self.pos + 1
        ))
    }

    fn binary(&mut self, level: usize) -> Result<Expr, ExprError> {
        if level == LEVELS.len() {
            return self.atom();
        }
        let mut lhs = self.binary(level + 1)?;
        loop {
            self.skip_space();
            let rest = &self.text[self.pos..];
            let Some(&(sym, op)) = LEVELS[level].iter().find(|(sym, _)| rest.starts_with(sym)) else {
                return Ok(lhs);
            };
            self.pos += sym.len();
            let rhs = self.binary(level + 1)?;
            lhs = Expr::Bin(Box::new(lhs), op, Box::new(rhs));
        }
    }

    fn atom(&mut self) -> Result<Expr, ExprError> {
        self.skip_space();
        let rest = &self.text[self.pos..];
        if rest.starts_with('(') {
            if self.nesting == MAX_NESTING {
                return Err(self.error(&format!("parentheses nested deeper than {MAX_NESTING}")));
            }
            self.pos += 1;
            self.nesting += 1;
            let e = self.binary(0)?;
            self.nesting -= 1;
            self.skip_space();
            if !self.text[self.pos..].starts_with(')') {
                return Err(self.error("expected `)`"));
            }
            self.pos += 1;
            return Ok(e);
        }
        if rest.starts_with('t') && !rest[1..].starts_with(|c: char| c.is_alphanumeric() || c == '_') {
            self.pos += 1;
            return Ok(Expr::T);
        }
        let digits = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        if digits == 0 {
            return Err(self.error(if rest.is_empty() {
                "expected a value, found the end"
            } else {
                "expected a value"
            }));
        }
        let value = rest[..digits].parse().map_err(|_| self.error("integer too large"))?;
        self.pos += digits;
        Ok(Expr::Lit(value))
    }
}

impl Expr {
    /// Parses `text`.
    ///
    /// # Errors
    /// A one-line message naming the column and the accepted syntax.
    pub fn parse(text: &str) -> Result<Expr, ExprError> {
        if text.chars().count() > MAX_LEN {
            return Err(ExprError(format!(
                "an expression of {} characters: at most {MAX_LEN} are accepted",
                text.chars().count()
            )));
        }
        let mut p = Parser { text, pos: 0, nesting: 0 };
        let e = p.binary(0)?;
        p.skip_space();
        if p.pos < text.len() {
            return Err(p.error("unexpected text"));
        }
        Ok(e)
    }

    /// The value at thread index `t`.
    ///
    /// # Errors
    /// Division or remainder by zero, a shift outside 0..64, or an overflow.
    pub fn eval(&self, t: i64) -> Result<i64, ExprError> {
        match self {
            Expr::T => Ok(t),
            Expr::Lit(v) => Ok(*v),
            Expr::Bin(a, op, b) => {
                let (a, b) = (a.eval(t)?, b.eval(t)?);
                let overflow = || ExprError(format!("overflow at t = {t}"));
                match op {
                    Op::Mul => a.checked_mul(b).ok_or_else(overflow),
                    Op::Add => a.checked_add(b).ok_or_else(overflow),
                    Op::Sub => a.checked_sub(b).ok_or_else(overflow),
                    Op::Div | Op::Rem if b == 0 => Err(ExprError(format!("division by zero at t = {t}"))),
                    Op::Div => Ok(a / b),
                    Op::Rem => Ok(a % b),
                    Op::Shl | Op::Shr if !(0..64).contains(&b) => {
                        Err(ExprError(format!("shift by {b} at t = {t}: allowed 0..=63")))
                    }
                    Op::Shl => a.checked_mul(1 << b).ok_or_else(overflow),
                    Op::Shr => Ok(a >> b),
                    Op::And => Ok(a & b),
                    Op::Or => Ok(a | b),
                }
            }
        }
    }

    /// The value at `t` as an index, refusing a negative one.
    ///
    /// # Errors
    /// As [`Expr::eval`], or a negative value.
    pub fn index(&self, t: u32) -> Result<u64, ExprError> {
        let v = self.eval(i64::from(t))?;
        u64::try_from(v).map_err(|_| ExprError(format!("the index is {v} at t = {t}: indices must be 0 or more")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str, t: i64) -> i64 {
        Expr::parse(text).unwrap().eval(t).unwrap()
    }

    #[test]
    fn the_bank_and_coalescing_examples_evaluate() {
        for t in 0..64 {
            assert_eq!(at("t*2", t), t * 2);
            assert_eq!(at("(t%4)*4", t), (t % 4) * 4);
            assert_eq!(at("(t>>1)%4", t), (t >> 1) % 4);
            assert_eq!(at("t / 16 * 17 + t % 16", t), t / 16 * 17 + t % 16);
            assert_eq!(at("t & 7 | 8", t), (t & 7) | 8);
            assert_eq!(at("1 << t % 8 + 1", t), 1 << (t % 8 + 1));
            assert_eq!(at("t - 3 - 2", t), t - 5);
        }
    }

    #[test]
    fn precedence_follows_c() {
        assert_eq!(at("2 + 3 * 4", 0), 14);
        assert_eq!(at("1 << 2 + 1", 0), 8);
        assert_eq!(at("6 & 3 | 8", 0), 10);
        assert_eq!(at("((t))", 5), 5);
    }

    #[test]
    fn deep_or_long_expressions_are_refused_not_a_stack_overflow() {
        let nested = |d: usize| format!("{}t{}", "(".repeat(d), ")".repeat(d));
        assert_eq!(at(&nested(MAX_NESTING), 3), 3);
        let e = Expr::parse(&nested(MAX_NESTING + 1)).unwrap_err().0;
        assert!(e.contains("parentheses nested deeper than 64 at column 65"), "{e}");
        let long = vec!["t"; 600].join("+");
        assert_eq!(Expr::parse(&long).unwrap_err().0, "an expression of 1199 characters: at most 1024 are accepted");
        assert_eq!(at(&vec!["t"; 500].join("+"), 2), 1000);
        let e = Expr::parse(&nested(6000)).unwrap_err().0;
        assert!(e.contains("at most 1024"), "{e}");
    }

    #[test]
    fn bad_expressions_name_the_column() {
        let e = Expr::parse("t*").unwrap_err().0;
        assert!(e.starts_with("`t*`: expected a value, found the end at column 3"), "{e}");
        assert!(Expr::parse("(t%4").unwrap_err().0.contains("expected `)`"));
        assert!(Expr::parse("t**2").unwrap_err().0.contains("expected a value at column 3"));
        assert!(Expr::parse("x+1").unwrap_err().0.contains("column 1"));
        assert!(Expr::parse("t 2").unwrap_err().0.contains("unexpected text at column 3"));
        assert!(Expr::parse("tt").is_err());
        assert_eq!(Expr::parse("t/0").unwrap().eval(1).unwrap_err().0, "division by zero at t = 1");
        assert!(Expr::parse("t-1").unwrap().index(0).unwrap_err().0.contains("must be 0 or more"));
        assert!(Expr::parse("1<<64").unwrap().eval(0).is_err());
    }
}
