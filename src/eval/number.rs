//! Numbers as the evaluator sees them: 64-bit integers or floats.

use std::cmp::Ordering;
use std::fmt;

use super::Val;

/// A number: integer arithmetic stays exact, mixing with a float gives a float.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Num {
    /// A whole number.
    I(i64),
    /// A float.
    F(f64),
}

impl Num {
    /// The number in `value`, if it is one (`u64` beyond `i64` becomes a float).
    #[must_use]
    pub(crate) fn of(value: &Val) -> Option<Num> {
        let Val::Number(n) = value else { return None };
        n.as_i64().map(Num::I).or_else(|| n.as_f64().map(Num::F))
    }

    /// As a float.
    #[must_use]
    #[allow(clippy::cast_precision_loss)]
    pub(crate) fn as_f64(self) -> f64 {
        match self {
            Num::I(i) => i as f64,
            Num::F(f) => f,
        }
    }

    /// As a value (non-finite floats are never produced: see [`Num::finite`]).
    #[must_use]
    pub(crate) fn to_value(self) -> Val {
        match self {
            Num::I(i) => Val::int(i),
            Num::F(f) => serde_json::Number::from_f64(f).map_or(Val::Null, Val::Number),
        }
    }

    /// `self` when it is finite.
    #[must_use]
    pub(crate) fn finite(self) -> Option<Num> {
        match self {
            Num::F(f) if !f.is_finite() => None,
            n => Some(n),
        }
    }

    /// `-self`; `None` on overflow.
    #[must_use]
    pub(crate) fn checked_neg(self) -> Option<Num> {
        match self {
            Num::I(i) => i.checked_neg().map(Num::I),
            Num::F(f) => Some(Num::F(-f)),
        }
    }

    fn combine(
        self,
        other: Num,
        int: fn(i64, i64) -> Option<i64>,
        float: fn(f64, f64) -> f64,
    ) -> Option<Num> {
        match (self, other) {
            (Num::I(a), Num::I(b)) => int(a, b).map(Num::I),
            (a, b) => Some(Num::F(float(a.as_f64(), b.as_f64()))),
        }
    }

    /// `self + other`; `None` on integer overflow.
    #[must_use]
    pub(crate) fn checked_add(self, other: Num) -> Option<Num> {
        self.combine(other, i64::checked_add, |a, b| a + b)
    }

    /// `self - other`; `None` on integer overflow.
    #[must_use]
    pub(crate) fn checked_sub(self, other: Num) -> Option<Num> {
        self.combine(other, i64::checked_sub, |a, b| a - b)
    }

    /// `self * other`; `None` on integer overflow.
    #[must_use]
    pub(crate) fn checked_mul(self, other: Num) -> Option<Num> {
        self.combine(other, i64::checked_mul, |a, b| a * b)
    }

    /// `self % other` (sign of `self`); `None` on overflow.
    #[must_use]
    pub(crate) fn checked_rem(self, other: Num) -> Option<Num> {
        self.combine(other, i64::checked_rem, |a, b| a % b)
    }

    /// Numeric order; `None` only for NaN, which values never hold.
    #[must_use]
    pub(crate) fn cmp_num(self, other: Num) -> Option<Ordering> {
        match (self, other) {
            (Num::I(a), Num::I(b)) => Some(a.cmp(&b)),
            (a, b) => a.as_f64().partial_cmp(&b.as_f64()),
        }
    }
}

impl fmt::Display for Num {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.to_value().fmt(f)
    }
}
