//! Resolved expressions: names are slots, functions are [`Function`]s.

pub use crate::ast::{BinaryOp, UnaryOp};
use crate::source::Span;
use crate::value::Val;

/// A resolved expression with its source span (runtime errors point at it).
#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    /// What it computes.
    pub kind: ExprKind,
    /// Where it was written.
    pub span: Span,
}

// A million-node contract holds a few million expressions: the rarer,
// larger kinds are boxed so that each stays this size (asserted where
// the layout is known: 64-bit).
#[cfg(target_pointer_width = "64")]
const _: () = assert!(std::mem::size_of::<Expr>() == 40);

/// The kinds of resolved expression.
#[derive(Debug, Clone, PartialEq)]
pub enum ExprKind {
    /// A constant, as the runtime value it evaluates to (a string's text
    /// is shared, so evaluating it copies nothing).
    Literal(Val),
    /// A variable: a node of the contract ([`NodeId`](super::NodeId) index), a
    /// param of the tool, or an input of the agent, by position.
    Var(u32),
    /// `a.b`: the target and the field's name (one box, so an expression
    /// stays 40 bytes).
    Field(Box<(Expr, Box<str>)>),
    /// `a[i]`.
    Index(Box<Expr>, Box<Expr>),
    /// `-a`, `not a`.
    Unary(UnaryOp, Box<Expr>),
    /// `a + b`; `and`/`or` short-circuit.
    Binary(BinaryOp, Box<Expr>, Box<Expr>),
    /// `if c then a else b`: the condition and the two values.
    If(Box<[Expr; 3]>),
    /// `[a, b]`.
    Array(Box<[Expr]>),
    /// `{k: v}`, keys in source order.
    Object(Box<[(String, Expr)]>),
    /// An interpolated string.
    Interpolate(Box<[Part]>),
    /// A pure built-in function.
    Call(Function, Box<[Expr]>),
}

/// A piece of an interpolated string.
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    /// Literal text.
    Text(String),
    /// `{expr}`: strings inserted as is, other values as JSON.
    Expr(Expr),
}

impl Expr {
    /// The variables the expression reads, in first-mention order, once each.
    #[must_use]
    pub fn vars(&self) -> Vec<u32> {
        let mut out = Vec::new();
        self.visit_vars(&mut |v| {
            if !out.contains(&v) {
                out.push(v);
            }
        });
        out
    }

    /// Calls `f` for every variable read, in source order.
    pub fn visit_vars(&self, f: &mut (impl FnMut(u32) + ?Sized)) {
        match &self.kind {
            ExprKind::Literal(_) => {}
            ExprKind::Var(v) => f(*v),
            ExprKind::Field(field) => field.0.visit_vars(f),
            ExprKind::Unary(_, e) => e.visit_vars(f),
            ExprKind::Index(a, b) | ExprKind::Binary(_, a, b) => {
                a.visit_vars(f);
                b.visit_vars(f);
            }
            ExprKind::If(parts) => parts.iter().for_each(|e| e.visit_vars(f)),
            ExprKind::Array(items) | ExprKind::Call(_, items) => {
                items.iter().for_each(|e| e.visit_vars(f));
            }
            ExprKind::Object(entries) => entries.iter().for_each(|(_, e)| e.visit_vars(f)),
            ExprKind::Interpolate(parts) => parts.iter().for_each(|p| {
                if let Part::Expr(e) = p {
                    e.visit_vars(f);
                }
            }),
        }
    }
}

macro_rules! functions {
    ($($variant:ident $name:literal $min:literal ..= $max:literal,)*) => {
        /// The pure built-in functions.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Function { $(#[doc = concat!("`", $name, "`")] $variant,)* }

        impl Function {
            /// Every function, for "did you mean".
            pub const ALL: &'static [Function] = &[$(Function::$variant,)*];

            /// The function's name in `.ign`.
            #[must_use]
            pub fn name(self) -> &'static str {
                match self { $(Function::$variant => $name,)* }
            }

            /// The smallest and largest argument count.
            #[must_use]
            pub fn arity(self) -> (usize, usize) {
                match self { $(Function::$variant => ($min, $max),)* }
            }

            /// The function called `name`.
            #[must_use]
            pub fn from_name(name: &str) -> Option<Function> {
                match name { $($name => Some(Function::$variant),)* _ => None }
            }
        }
    };
}

functions! {
    Len "len" 1..=1,
    Upper "upper" 1..=1,
    Lower "lower" 1..=1,
    Trim "trim" 1..=1,
    Split "split" 2..=2,
    Join "join" 2..=2,
    Contains "contains" 2..=2,
    StartsWith "starts_with" 2..=2,
    EndsWith "ends_with" 2..=2,
    Replace "replace" 3..=3,
    Round "round" 1..=2,
    Floor "floor" 1..=1,
    Ceil "ceil" 1..=1,
    Abs "abs" 1..=1,
    Min "min" 1..=255,
    Max "max" 1..=255,
    Sum "sum" 1..=1,
    Keys "keys" 1..=1,
    Values "values" 1..=1,
    Get "get" 2..=3,
    ToString "to_string" 1..=1,
    ToNumber "to_number" 1..=1,
    ToJson "to_json" 1..=1,
    FromJson "from_json" 1..=1,
    Env "env" 1..=2,
    Successes "successes" 1..=1,
    Failures "failures" 1..=1,
    Matches "matches" 2..=2,
    File "file" 1..=1,
}

/// Largest compiled size of a `matches` pattern, so a pattern from the
/// data cannot take unbounded memory.
const PATTERN_SIZE_LIMIT: usize = 1 << 20;

/// The regular expression `pattern` of `matches`, or why it is not one.
/// The `regex` crate matches in time linear in the text.
///
/// # Errors
/// The pattern's syntax error, or that it is too large.
pub fn pattern(pattern: &str) -> Result<regex::Regex, String> {
    regex::RegexBuilder::new(pattern).size_limit(PATTERN_SIZE_LIMIT).build().map_err(|e| match e {
        regex::Error::CompiledTooBig(_) => "the pattern is too large".to_owned(),
        // A syntax error ends with the line naming the mistake.
        other => {
            let text = other.to_string();
            let last = text.lines().last().unwrap_or_default().trim();
            last.strip_prefix("error: ").unwrap_or(last).to_owned()
        }
    })
}
