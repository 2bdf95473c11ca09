//! Exact decimal numbers in DynamoDB's range and precision.
//!
//! DynamoDB keeps numbers as decimal text with up to 38 significant digits and normalizes them
//! (`1.50` comes back as `1.5`). We normalize on construction, so every backend stores and
//! returns the same bytes, and we compare and add on the digits themselves, never through a
//! float or a 28-digit decimal type that would round large values; only integers of at most 18
//! digits, which an `i64` holds exactly, are compared and added as `i64`.

use std::cmp::Ordering;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Most significant digits DynamoDB keeps.
pub(crate) const MAX_SIGNIFICANT_DIGITS: usize = 38;
/// Largest power of ten a DynamoDB number may reach (exclusive upper bound 1e126).
const MAX_INTEGER_DIGITS: usize = 126;
/// Smallest positive magnitude is 1e-130.
const MAX_FRACTION_DIGITS: usize = 130;

/// An exact decimal number in canonical text form (no exponent, no leading zeros in the
/// integer part, no trailing zeros in the fraction, no `-0`).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Number(String);

/// Why a text is not a number the store accepts.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a valid store number: {reason}")]
pub struct NumberError {
    /// What is wrong with the text.
    pub reason: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Parts {
    negative: bool,
    /// Integer digits without leading zeros ("" for zero).
    int: Vec<u8>,
    /// Fraction digits without trailing zeros.
    frac: Vec<u8>,
}

impl Parts {
    fn is_zero(&self) -> bool {
        self.int.is_empty() && self.frac.is_empty()
    }

    fn render(&self) -> String {
        if self.is_zero() {
            return "0".to_owned();
        }
        let mut out = String::with_capacity(self.int.len() + self.frac.len() + 2);
        if self.negative {
            out.push('-');
        }
        if self.int.is_empty() {
            out.push('0');
        } else {
            out.extend(self.int.iter().map(|d| char::from(b'0' + d)));
        }
        if !self.frac.is_empty() {
            out.push('.');
            out.extend(self.frac.iter().map(|d| char::from(b'0' + d)));
        }
        out
    }

    fn normalize(mut self) -> Self {
        let lead = self.int.iter().take_while(|d| **d == 0).count();
        self.int.drain(..lead);
        while self.frac.last() == Some(&0) {
            self.frac.pop();
        }
        if self.is_zero() {
            self.negative = false;
        }
        self
    }

    fn check_range(&self) -> Result<(), NumberError> {
        if self.int.len() > MAX_INTEGER_DIGITS {
            return Err(NumberError {
                reason: "magnitude above 1e125",
            });
        }
        if self.frac.len() > MAX_FRACTION_DIGITS {
            return Err(NumberError {
                reason: "magnitude below 1e-130",
            });
        }
        let significant = if self.int.is_empty() {
            let zeros = self.frac.iter().take_while(|d| **d == 0).count();
            self.frac.len() - zeros
        } else {
            // Trailing zeros of an integer are not significant (1e30 is one digit).
            let trailing = if self.frac.is_empty() {
                self.int.iter().rev().take_while(|d| **d == 0).count()
            } else {
                0
            };
            self.int.len() + self.frac.len() - trailing
        };
        if significant > MAX_SIGNIFICANT_DIGITS {
            return Err(NumberError {
                reason: "more than 38 significant digits",
            });
        }
        Ok(())
    }
}

fn parse_parts(text: &str) -> Result<Parts, NumberError> {
    let bytes = text.trim().as_bytes();
    let (negative, rest) = match bytes.first() {
        Some(b'-') => (true, &bytes[1..]),
        Some(b'+') => (false, &bytes[1..]),
        _ => (false, bytes),
    };
    let (mantissa, exponent) = match rest.iter().position(|b| *b == b'e' || *b == b'E') {
        Some(at) => {
            let exp_text = std::str::from_utf8(&rest[at + 1..]).map_err(|_| NumberError {
                reason: "exponent is not text",
            })?;
            let exp: i32 = exp_text.parse().map_err(|_| NumberError {
                reason: "bad exponent",
            })?;
            (&rest[..at], exp)
        }
        None => (rest, 0),
    };
    let (int_text, frac_text) = match mantissa.iter().position(|b| *b == b'.') {
        Some(at) => (&mantissa[..at], &mantissa[at + 1..]),
        None => (mantissa, &mantissa[mantissa.len()..]),
    };
    if int_text.is_empty() && frac_text.is_empty() {
        return Err(NumberError {
            reason: "no digits",
        });
    }
    let digits = |part: &[u8]| -> Result<Vec<u8>, NumberError> {
        part.iter()
            .map(|b| {
                if b.is_ascii_digit() {
                    Ok(b - b'0')
                } else {
                    Err(NumberError {
                        reason: "unexpected character",
                    })
                }
            })
            .collect()
    };
    let mut int = digits(int_text)?;
    let mut frac = digits(frac_text)?;
    if exponent.unsigned_abs() > 400 {
        return Err(NumberError {
            reason: "exponent out of range",
        });
    }
    // Move the decimal point by the exponent.
    if exponent > 0 {
        for _ in 0..exponent {
            let d = if frac.is_empty() { 0 } else { frac.remove(0) };
            int.push(d);
        }
    } else {
        for _ in 0..(-exponent) {
            let d = int.pop().unwrap_or(0);
            frac.insert(0, d);
        }
    }
    let parts = Parts {
        negative,
        int,
        frac,
    }
    .normalize();
    parts.check_range()?;
    Ok(parts)
}

/// Most digits of an integer read as an `i64` on the fast paths: any two such integers add
/// without overflow (2 × (10^18 − 1) < 2^63).
const SMALL_DIGITS: usize = 18;

/// `text` as an `i64` when it is already an integer in canonical form with at most
/// [`SMALL_DIGITS`] digits (no sign but `-`, no leading zero, not `-0`). Counts, times and
/// amounts in cents are such numbers, and gate checks compare and add them on every call:
/// they skip splitting into digit vectors. Anything else is split into digits, as before.
fn small_integer(text: &str) -> Option<i64> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    let canonical = match digits.as_bytes() {
        [] => false,
        [b'0'] => digits.len() == text.len(),
        [b'0', ..] => false,
        bytes => bytes.len() <= SMALL_DIGITS && bytes.iter().all(u8::is_ascii_digit),
    };
    if canonical { text.parse().ok() } else { None }
}

impl Number {
    /// Parses decimal text (an exponent is allowed) into canonical form.
    pub fn parse(text: &str) -> Result<Self, NumberError> {
        if small_integer(text).is_some() {
            return Ok(Number(text.to_owned()));
        }
        parse_parts(text).map(|p| Number(p.render()))
    }

    /// The number as an `i64`, when it is an integer of at most 18 digits.
    fn as_small_integer(&self) -> Option<i64> {
        small_integer(&self.0)
    }

    /// How the number compares with the integer `other` (an expiry with the time, say),
    /// without making a `Number` of it when both are small integers.
    pub fn cmp_integer(&self, other: i64) -> Ordering {
        match self.as_small_integer() {
            Some(small) => small.cmp(&other),
            None => self.cmp(&Number::from(other)),
        }
    }

    /// The canonical decimal text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    fn parts(&self) -> Parts {
        // The text is canonical by construction, so parsing cannot fail.
        parse_parts(&self.0).unwrap_or(Parts {
            negative: false,
            int: Vec::new(),
            frac: Vec::new(),
        })
    }

    /// Exact sum, or an error when the result leaves DynamoDB's range or precision.
    pub fn checked_add(&self, other: &Number) -> Result<Number, NumberError> {
        if let (Some(a), Some(b)) = (self.as_small_integer(), other.as_small_integer()) {
            return Ok(Number::from(a + b));
        }
        self.add_digits(other)
    }

    fn add_digits(&self, other: &Number) -> Result<Number, NumberError> {
        let (a, b) = (self.parts(), other.parts());
        let scale = a.frac.len().max(b.frac.len());
        let width = a.int.len().max(b.int.len()) + scale + 1;
        let align = |p: &Parts| -> Vec<u8> {
            // Little-endian digit vector with `scale` fraction digits.
            let mut v = vec![0u8; width];
            for (i, d) in p.frac.iter().enumerate() {
                v[scale - 1 - i] = *d;
            }
            for (i, d) in p.int.iter().rev().enumerate() {
                v[scale + i] = *d;
            }
            v
        };
        let (x, y) = (align(&a), align(&b));
        let (negative, digits) = if a.negative == b.negative {
            let mut out = vec![0u8; width];
            let mut carry = 0;
            for i in 0..width {
                let s = x[i] + y[i] + carry;
                out[i] = s % 10;
                carry = s / 10;
            }
            (a.negative, out)
        } else {
            let (big, small, negative) = match cmp_magnitude(&x, &y) {
                Ordering::Less => (&y, &x, b.negative),
                _ => (&x, &y, a.negative),
            };
            let mut out = vec![0u8; width];
            let mut borrow = 0i8;
            for i in 0..width {
                let mut d = big[i] as i8 - small[i] as i8 - borrow;
                borrow = if d < 0 {
                    d += 10;
                    1
                } else {
                    0
                };
                out[i] = d as u8;
            }
            (negative, out)
        };
        let frac: Vec<u8> = digits[..scale].iter().rev().copied().collect();
        let int: Vec<u8> = digits[scale..].iter().rev().copied().collect();
        let parts = Parts {
            negative,
            int,
            frac,
        }
        .normalize();
        parts.check_range()?;
        Ok(Number(parts.render()))
    }
}

fn cmp_magnitude(x: &[u8], y: &[u8]) -> Ordering {
    // Little-endian vectors of equal width: compare from the most significant digit.
    for i in (0..x.len()).rev() {
        match x[i].cmp(&y[i]) {
            Ordering::Equal => continue,
            other => return other,
        }
    }
    Ordering::Equal
}

impl Ord for Number {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self.as_small_integer(), other.as_small_integer()) {
            (Some(a), Some(b)) => a.cmp(&b),
            _ => self.cmp_digits(other),
        }
    }
}

impl Number {
    fn cmp_digits(&self, other: &Self) -> Ordering {
        let (a, b) = (self.parts(), other.parts());
        match (a.negative, b.negative) {
            (false, true) => return Ordering::Greater,
            (true, false) => return Ordering::Less,
            _ => {}
        }
        let magnitude = a
            .int
            .len()
            .cmp(&b.int.len())
            .then_with(|| a.int.cmp(&b.int))
            .then_with(|| a.frac.cmp(&b.frac));
        if a.negative {
            magnitude.reverse()
        } else {
            magnitude
        }
    }
}

impl PartialOrd for Number {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for Number {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Number {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Number({})", self.0)
    }
}

impl From<i64> for Number {
    fn from(v: i64) -> Self {
        Number(itoa::Buffer::new().format(v).to_owned())
    }
}

impl From<u64> for Number {
    fn from(v: u64) -> Self {
        Number(itoa::Buffer::new().format(v).to_owned())
    }
}

impl std::str::FromStr for Number {
    type Err = NumberError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Number::parse(s)
    }
}

impl Serialize for Number {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Number {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Number::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str) -> Number {
        Number::parse(s).unwrap()
    }

    #[test]
    fn canonical_forms() {
        assert_eq!(n("1.50").as_str(), "1.5");
        assert_eq!(n("007").as_str(), "7");
        assert_eq!(n("-0.000").as_str(), "0");
        assert_eq!(n("1e3").as_str(), "1000");
        assert_eq!(n("12.5e-3").as_str(), "0.0125");
        assert_eq!(n(".5").as_str(), "0.5");
        assert_eq!(
            n("12345678901234567890123456789012345678").as_str(),
            "12345678901234567890123456789012345678"
        );
        assert!(Number::parse("123456789012345678901234567890123456789").is_err());
        assert!(Number::parse("1e126").is_err());
        assert!(Number::parse("abc").is_err());
        assert!(Number::parse("").is_err());
        assert!(Number::parse("1.2.3").is_err());
    }

    /// Texts on both sides of the fast paths' edges.
    const EDGES: &[&str] = &[
        "0",
        "-0",
        "00",
        "007",
        "-007",
        "+5",
        " 5",
        "5 ",
        "1",
        "-1",
        "10",
        "-10",
        "9.0",
        "1e3",
        "999999999999999999",
        "-999999999999999999",
        "1000000000000000000",
        "-1000000000000000000",
        "123456789012345678",
        "1234567890123456789",
        "0.5",
        "-0.5",
        "12345678901234567890123456789012345678",
        "",
        "-",
        "1a",
        "٣",
    ];

    #[test]
    fn the_fast_paths_agree_with_the_digits() {
        for text in EDGES {
            let exact = parse_parts(text).map(|p| Number(p.render()));
            assert_eq!(Number::parse(text), exact, "parse {text:?}");
        }
        let numbers: Vec<Number> = EDGES.iter().filter_map(|t| Number::parse(t).ok()).collect();
        for a in &numbers {
            assert_eq!(
                a.as_small_integer(),
                a.as_str()
                    .parse::<i64>()
                    .ok()
                    .filter(|v| v.unsigned_abs() < 10u64.pow(18))
            );
            for b in &numbers {
                assert_eq!(a.cmp(b), a.cmp_digits(b), "{a:?} vs {b:?}");
                assert_eq!(a.checked_add(b), a.add_digits(b), "{a:?} + {b:?}");
                if let Some(integer) = b.as_small_integer() {
                    assert_eq!(
                        a.cmp_integer(integer),
                        a.cmp_digits(b),
                        "{a:?} vs {integer}"
                    );
                }
            }
        }
    }

    #[test]
    fn ordering_and_addition() {
        assert!(n("-2") < n("-1.5"));
        assert!(n("10") > n("9.99"));
        assert!(n("0.1") < n("0.11"));
        assert_eq!(n("0.1").checked_add(&n("0.2")).unwrap(), n("0.3"));
        assert_eq!(n("-5").checked_add(&n("3.25")).unwrap(), n("-1.75"));
        assert_eq!(n("5").checked_add(&n("-5")).unwrap(), n("0"));
        assert_eq!(
            n("99999999999999999999999999999999999999")
                .checked_add(&n("-1"))
                .unwrap(),
            n("99999999999999999999999999999999999998")
        );
        assert!(
            n("99999999999999999999999999999999999999")
                .checked_add(&n("1"))
                .is_ok()
        );
        assert!(
            n("99999999999999999999999999999999999999")
                .checked_add(&n("0.1"))
                .is_err()
        );
    }
}
