//! Money: amounts, currencies, tax and quote totals, computed on the server in decimal.
//!
//! * Amounts are [`Decimal`], read from plain decimal strings (`"1000.50"`: ASCII digits and an
//!   optional `.`; no thousands separators, signs, exponents, spaces or currency symbols) or from
//!   integer minor units ([`Money::from_minor`]). Never `f64`: a JSON number with a fraction is
//!   refused at the boundary ([`amount_from_json`]), because it has already been through a binary
//!   float. JSON integers are exact and accepted.
//! * Amounts are never negative (quotes have no credit lines) and at most 10^12 units.
//! * Rounding is half away from zero ([`RoundingStrategy::MidpointAwayFromZero`], "commercial
//!   rounding": 0.005 → 0.01), to the currency's minor unit, applied to each line total
//!   (quantity × unit price) and to the tax (net × rate). Net is the sum of the rounded line
//!   totals, gross is net + tax, so the figures on a quote always add up.

use std::fmt;

use rust_decimal::{Decimal, RoundingStrategy};
use serde::{Serialize, Serializer};
use serde_json::Value;

/// The largest amount accepted anywhere (unit price, line total, net, tax, gross): 10^12 units.
pub const MAX_AMOUNT: i64 = 1_000_000_000_000;

/// The largest quantity of one line.
pub const MAX_QUANTITY: i64 = 10_000;

/// Decimal places a quantity may have.
pub const MAX_QUANTITY_DECIMALS: u32 = 3;

/// Decimal places a unit price may have (more than the currency's, e.g. 0.125 per unit; the
/// line total is rounded to the currency).
pub const MAX_PRICE_DECIMALS: u32 = 6;

/// Decimal places a tax rate (a percentage) may have.
pub const MAX_TAX_RATE_DECIMALS: u32 = 4;

/// Lines a quote may have.
pub const MAX_LINES: usize = 100;

/// Characters a line description may have.
pub const MAX_DESCRIPTION_CHARS: usize = 500;

/// The rounding used everywhere here: half away from zero.
pub const ROUNDING: RoundingStrategy = RoundingStrategy::MidpointAwayFromZero;

/// A failure to read or compute money. The texts name the cause and the fix; they reach a model.
///
/// Serializes as a JSON object with a `code` field plus the variant's fields, for the details line
/// of a tool error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize)]
#[serde(tag = "code", rename_all = "snake_case")]
pub enum MoneyError {
    /// Not a plain decimal string.
    #[error(
        "{what} \"{text}\" is not a plain decimal number; send ASCII digits with an optional '.' decimal point as a string, e.g. \"1000.50\" (no thousands separators, signs, exponents, spaces or currency symbols)"
    )]
    NotADecimal {
        /// The field or kind of value.
        what: &'static str,
        /// What was sent.
        text: String,
    },

    /// A JSON number with a fraction (a binary float) where a decimal string belongs.
    #[error(
        "{what} was sent as the JSON number {number}; send it as a decimal string such as \"{number}\", because JSON numbers with a fraction are binary floats and can lose cents"
    )]
    FloatNumber {
        /// The field or kind of value.
        what: &'static str,
        /// The number as received.
        number: String,
    },

    /// A JSON value that is neither a string nor a number.
    #[error("{what} must be a decimal string such as \"19.99\", not {found}")]
    WrongJsonType {
        /// The field or kind of value.
        what: &'static str,
        /// The JSON type received, e.g. `a boolean`.
        found: &'static str,
    },

    /// A negative value.
    #[error(
        "{what} \"{text}\" is negative; amounts, quantities and tax rates are never negative here (quotes have no credit lines: lower a unit price instead)"
    )]
    Negative {
        /// The field or kind of value.
        what: &'static str,
        /// What was sent.
        text: String,
    },

    /// More decimal places than allowed.
    #[error(
        "{what} \"{text}\" has {decimals} decimal places, at most {max} are allowed; round it to {max} decimal places and send it again"
    )]
    TooManyDecimals {
        /// The field or kind of value.
        what: &'static str,
        /// What was sent.
        text: String,
        /// Decimal places (trailing zeros ignored).
        decimals: u32,
        /// Decimal places allowed.
        max: u32,
    },

    /// A value above its limit.
    #[error("{what} {text} is above the limit of {max}; send a smaller value or split it")]
    TooLarge {
        /// The field or kind of value.
        what: &'static str,
        /// The value.
        text: String,
        /// The limit.
        max: String,
    },

    /// A quantity of zero.
    #[error(
        "quantity must be greater than 0 (at most {max}); remove the line instead of sending quantity 0"
    )]
    ZeroQuantity {
        /// The largest quantity.
        max: i64,
    },

    /// A tax rate above 100 %.
    #[error(
        "tax rate \"{text}\" is not between 0 and 100; send the rate as a percentage string, e.g. \"19\" for 19 % or \"7.5\" for 7.5 %"
    )]
    TaxRateOutOfRange {
        /// What was sent.
        text: String,
    },

    /// An unsupported currency code.
    #[error(
        "unknown currency \"{currency}\"; send an ISO 4217 code in capitals, one of {}",
        .supported.join(", ")
    )]
    UnknownCurrency {
        /// What was sent.
        currency: String,
        /// The supported codes.
        supported: Vec<&'static str>,
    },

    /// An unusable line description.
    #[error(
        "description {problem}; send a short plain-text description of at most {max} characters"
    )]
    InvalidDescription {
        /// What is wrong, e.g. `is empty`.
        problem: &'static str,
        /// The longest description.
        max: usize,
    },

    /// A quote without lines.
    #[error(
        "a quote needs at least one line; send lines with description, quantity and unit_price"
    )]
    NoLines,

    /// A quote with too many lines.
    #[error(
        "{count} lines is more than the {max} a quote may have; combine lines or split the quote"
    )]
    TooManyLines {
        /// Lines sent.
        count: usize,
        /// Lines allowed.
        max: usize,
    },

    /// An error in one line of a quote; `line` is the 0-based index into `lines`.
    #[error("lines[{line}]: {error}")]
    InLine {
        /// 0-based index into the lines that were sent.
        line: usize,
        /// What is wrong with it.
        error: Box<MoneyError>,
    },
}

/// A supported currency with its ISO 4217 minor-unit exponent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Currency {
    /// Euro, 2 decimals.
    Eur,
    /// US dollar, 2 decimals.
    Usd,
    /// Pound sterling, 2 decimals.
    Gbp,
    /// Swiss franc, 2 decimals.
    Chf,
    /// Swedish krona, 2 decimals.
    Sek,
    /// Norwegian krone, 2 decimals.
    Nok,
    /// Danish krone, 2 decimals.
    Dkk,
    /// Polish złoty, 2 decimals.
    Pln,
    /// Czech koruna, 2 decimals.
    Czk,
    /// Canadian dollar, 2 decimals.
    Cad,
    /// Australian dollar, 2 decimals.
    Aud,
    /// Japanese yen, no decimals.
    Jpy,
}

impl Currency {
    /// Every supported currency.
    pub const ALL: [Self; 12] = [
        Self::Eur,
        Self::Usd,
        Self::Gbp,
        Self::Chf,
        Self::Sek,
        Self::Nok,
        Self::Dkk,
        Self::Pln,
        Self::Czk,
        Self::Cad,
        Self::Aud,
        Self::Jpy,
    ];

    /// Reads an ISO 4217 code such as `EUR`. Codes are upper case; `eur` is refused with the
    /// list of supported codes.
    pub fn parse(code: &str) -> Result<Self, MoneyError> {
        Self::ALL
            .into_iter()
            .find(|c| c.code() == code)
            .ok_or_else(|| MoneyError::UnknownCurrency {
                currency: code.to_owned(),
                supported: Self::ALL.iter().map(|c| c.code()).collect(),
            })
    }

    /// The ISO 4217 code, e.g. `EUR`.
    pub fn code(self) -> &'static str {
        match self {
            Self::Eur => "EUR",
            Self::Usd => "USD",
            Self::Gbp => "GBP",
            Self::Chf => "CHF",
            Self::Sek => "SEK",
            Self::Nok => "NOK",
            Self::Dkk => "DKK",
            Self::Pln => "PLN",
            Self::Czk => "CZK",
            Self::Cad => "CAD",
            Self::Aud => "AUD",
            Self::Jpy => "JPY",
        }
    }

    /// Decimal places of the minor unit: 2 for EUR (cents), 0 for JPY.
    pub fn exponent(self) -> u32 {
        match self {
            Self::Jpy => 0,
            _ => 2,
        }
    }

    /// `amount` rounded half away from zero to this currency's minor unit.
    pub fn round(self, amount: Decimal) -> Decimal {
        amount.round_dp_with_strategy(self.exponent(), ROUNDING)
    }
}

impl fmt::Display for Currency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

impl Serialize for Currency {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.code())
    }
}

/// An exact, non-negative amount in a currency, held as integer minor units.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Money {
    minor: i64,
    currency: Currency,
}

impl Money {
    /// `minor` units of `currency`: `from_minor(1999, Currency::Eur)` is 19.99 EUR.
    pub fn from_minor(minor: i64, currency: Currency) -> Result<Self, MoneyError> {
        if minor < 0 {
            return Err(MoneyError::Negative {
                what: "amount in minor units",
                text: minor.to_string(),
            });
        }
        let money = Self { minor, currency };
        check_max("amount", money.amount())?;
        Ok(money)
    }

    /// An amount with at most the currency's decimals, e.g. `19.99` EUR or `1500` JPY.
    pub fn from_decimal(amount: Decimal, currency: Currency) -> Result<Self, MoneyError> {
        let text = amount.to_string();
        check_value("amount", &text, amount, currency.exponent())?;
        let mut scaled = amount;
        scaled.rescale(currency.exponent());
        let minor = i64::try_from(scaled.mantissa()).map_err(|_| MoneyError::TooLarge {
            what: "amount",
            text,
            max: MAX_AMOUNT.to_string(),
        })?;
        Ok(Self { minor, currency })
    }

    /// Reads a decimal string with at most the currency's decimals (`"19.99"` EUR, `"1500"` JPY).
    pub fn parse(text: &str, currency: Currency) -> Result<Self, MoneyError> {
        let amount = parse_plain("amount", text, MAX_PRICE_DECIMALS, MAX_AMOUNT)?;
        check_value("amount", text, amount, currency.exponent())?;
        Self::from_decimal(amount, currency)
    }

    /// Zero in `currency`.
    pub fn zero(currency: Currency) -> Self {
        Self { minor: 0, currency }
    }

    /// The amount in minor units (cents).
    pub fn minor_units(&self) -> i64 {
        self.minor
    }

    /// The currency.
    pub fn currency(&self) -> Currency {
        self.currency
    }

    /// The amount as a decimal with exactly the currency's decimals.
    pub fn amount(&self) -> Decimal {
        Decimal::new(self.minor, self.currency.exponent())
    }

    /// The presenter.
    pub fn view(&self) -> MoneyView {
        MoneyView {
            amount: self.amount().to_string(),
            minor_units: self.minor,
            currency: self.currency.code(),
        }
    }
}

impl fmt::Display for Money {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.amount(), self.currency)
    }
}

/// How an amount is shown: `{"amount": "59.97", "minor_units": 5997, "currency": "EUR"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MoneyView {
    /// Decimal string with exactly the currency's decimals, `59.97`, `1500` for JPY.
    pub amount: String,
    /// The same amount in minor units.
    pub minor_units: i64,
    /// ISO 4217 code.
    pub currency: &'static str,
}

/// A tax rate as a percentage, 0 to 100, e.g. 19 or 7.5.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TaxRate(Decimal);

impl TaxRate {
    /// Reads a percentage string: `"19"`, `"7.5"`, `"0"`; at most
    /// [`MAX_TAX_RATE_DECIMALS`] decimals.
    pub fn parse(text: &str) -> Result<Self, MoneyError> {
        let percent = parse_plain("tax rate", text, MAX_TAX_RATE_DECIMALS, 100)?;
        Self::from_percent(percent, text)
    }

    /// Reads a percentage from JSON: a decimal string or an integer; a float is refused.
    pub fn from_json(value: &Value) -> Result<Self, MoneyError> {
        let (percent, text) = decimal_from_json("tax rate", value, MAX_TAX_RATE_DECIMALS, 100)?;
        Self::from_percent(percent, &text)
    }

    fn from_percent(percent: Decimal, text: &str) -> Result<Self, MoneyError> {
        if percent.is_sign_negative() && !percent.is_zero() {
            return Err(MoneyError::Negative {
                what: "tax rate",
                text: text.to_owned(),
            });
        }
        if percent > Decimal::ONE_HUNDRED {
            return Err(MoneyError::TaxRateOutOfRange {
                text: text.to_owned(),
            });
        }
        check_decimals("tax rate", text, percent, MAX_TAX_RATE_DECIMALS)?;
        Ok(Self(percent.normalize()))
    }

    /// The rate as a percentage, e.g. 19.
    pub fn percent(&self) -> Decimal {
        self.0
    }

    /// The rate as a fraction, e.g. 0.19.
    pub fn fraction(&self) -> Decimal {
        self.0 / Decimal::ONE_HUNDRED
    }
}

impl fmt::Display for TaxRate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// One line of a quote. Validated by [`compute_totals`] (and by [`Line::parse`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// What is sold, plain text.
    pub description: String,
    /// Greater than 0, at most [`MAX_QUANTITY`], at most [`MAX_QUANTITY_DECIMALS`] decimals.
    pub quantity: Decimal,
    /// Price of one unit, 0 to [`MAX_AMOUNT`], at most [`MAX_PRICE_DECIMALS`] decimals.
    pub unit_price: Decimal,
}

impl Line {
    /// A validated line from decimal strings.
    pub fn parse(description: &str, quantity: &str, unit_price: &str) -> Result<Self, MoneyError> {
        let line = Self {
            description: description.to_owned(),
            quantity: parse_quantity(quantity)?,
            unit_price: parse_amount(unit_price)?,
        };
        line.validate()?;
        Ok(line)
    }

    fn validate(&self) -> Result<(), MoneyError> {
        let description = self.description.trim();
        let problem = if description.is_empty() {
            Some("is empty")
        } else if description.chars().count() > MAX_DESCRIPTION_CHARS {
            Some("is too long")
        } else if description.chars().any(char::is_control) {
            Some("contains control characters such as line breaks or tabs")
        } else if description.chars().any(crate::text::hides_or_reorders) {
            Some(
                "contains a character that hides text or reorders what readers see (zero-width, bidi control or blank filler)",
            )
        } else {
            None
        };
        if let Some(problem) = problem {
            return Err(MoneyError::InvalidDescription {
                problem,
                max: MAX_DESCRIPTION_CHARS,
            });
        }
        check_quantity(&self.quantity.to_string(), self.quantity)?;
        check_value(
            "unit price",
            &self.unit_price.to_string(),
            self.unit_price,
            MAX_PRICE_DECIMALS,
        )
    }

    /// Quantity × unit price, rounded half away from zero to the currency's minor unit.
    pub fn total(&self, currency: Currency) -> Result<Money, MoneyError> {
        self.validate()?;
        let exact = self
            .quantity
            .checked_mul(self.unit_price)
            .ok_or_else(|| too_large("line total", "quantity × unit price".to_owned()))?;
        let rounded = currency.round(exact);
        check_max("line total", rounded)?;
        Money::from_decimal(rounded, currency)
    }
}

/// The figures of a quote. Build with [`compute_totals`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Totals {
    /// The currency of every amount.
    pub currency: Currency,
    /// The tax rate applied to the net.
    pub tax_rate: TaxRate,
    /// Each line's rounded total, in line order.
    pub line_totals: Vec<Money>,
    /// Sum of the line totals.
    pub net: Money,
    /// Net × rate, rounded half away from zero to the minor unit.
    pub tax: Money,
    /// Net + tax.
    pub gross: Money,
}

impl Totals {
    /// The presenter. Line descriptions are left out: they are text for the caller's presenter
    /// to show (and, where third parties wrote them, to mark as untrusted).
    pub fn view(&self) -> TotalsView {
        TotalsView {
            currency: self.currency.code(),
            tax_rate: self.tax_rate.to_string(),
            line_totals: self.line_totals.iter().map(Money::view).collect(),
            net: self.net.view(),
            tax: self.tax.view(),
            gross: self.gross.view(),
        }
    }
}

/// How totals are shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TotalsView {
    /// ISO 4217 code.
    pub currency: &'static str,
    /// Percentage as a decimal string, `19` or `7.5`.
    pub tax_rate: String,
    /// Each line's total, in line order.
    pub line_totals: Vec<MoneyView>,
    /// Sum of the line totals.
    pub net: MoneyView,
    /// Tax on the net.
    pub tax: MoneyView,
    /// Net + tax.
    pub gross: MoneyView,
}

/// Computes a quote's totals: each line total = quantity × unit price rounded to the minor unit;
/// net = sum of line totals; tax = net × rate rounded to the minor unit; gross = net + tax.
/// Rounding is half away from zero. Errors in a line come as [`MoneyError::InLine`] with its
/// 0-based index.
pub fn compute_totals(
    lines: &[Line],
    currency: Currency,
    tax_rate: TaxRate,
) -> Result<Totals, MoneyError> {
    if lines.is_empty() {
        return Err(MoneyError::NoLines);
    }
    if lines.len() > MAX_LINES {
        return Err(MoneyError::TooManyLines {
            count: lines.len(),
            max: MAX_LINES,
        });
    }
    let line_totals = lines
        .iter()
        .enumerate()
        .map(|(index, line)| {
            line.total(currency).map_err(|error| MoneyError::InLine {
                line: index,
                error: Box::new(error),
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let net_amount = line_totals
        .iter()
        .try_fold(Decimal::ZERO, |sum, total| sum.checked_add(total.amount()))
        .ok_or_else(|| too_large("net", "the sum of the line totals".to_owned()))?;
    check_max("net", net_amount)?;
    let tax_amount = currency.round(
        net_amount
            .checked_mul(tax_rate.fraction())
            .ok_or_else(|| too_large("tax", "net × tax rate".to_owned()))?,
    );
    let gross_amount = net_amount
        .checked_add(tax_amount)
        .ok_or_else(|| too_large("gross", "net + tax".to_owned()))?;
    check_max("gross", gross_amount)?;
    Ok(Totals {
        currency,
        tax_rate,
        net: Money::from_decimal(net_amount, currency)?,
        tax: Money::from_decimal(tax_amount, currency)?,
        gross: Money::from_decimal(gross_amount, currency)?,
        line_totals,
    })
}

/// Reads an amount such as a unit price: a plain decimal string, 0 to [`MAX_AMOUNT`], at most
/// [`MAX_PRICE_DECIMALS`] decimals. `"1,000.50"`, `"1e3"`, `"-5"`, `"€5"` are refused. For an
/// amount that must fit the currency's minor unit use [`Money::parse`].
pub fn parse_amount(text: &str) -> Result<Decimal, MoneyError> {
    let amount = parse_plain("amount", text, MAX_PRICE_DECIMALS, MAX_AMOUNT)?;
    check_value("amount", text, amount, MAX_PRICE_DECIMALS)?;
    Ok(amount)
}

/// Reads an amount from JSON: a decimal string as in [`parse_amount`], or a JSON integer. A JSON
/// number with a fraction (`19.99`) is refused with [`MoneyError::FloatNumber`].
pub fn amount_from_json(value: &Value) -> Result<Decimal, MoneyError> {
    let (amount, text) = decimal_from_json("amount", value, MAX_PRICE_DECIMALS, MAX_AMOUNT)?;
    check_value("amount", &text, amount, MAX_PRICE_DECIMALS)?;
    Ok(amount)
}

/// Reads a quantity: a plain decimal string, greater than 0, at most [`MAX_QUANTITY`], at most
/// [`MAX_QUANTITY_DECIMALS`] decimals.
pub fn parse_quantity(text: &str) -> Result<Decimal, MoneyError> {
    let quantity = parse_plain("quantity", text, MAX_QUANTITY_DECIMALS, MAX_QUANTITY)?;
    check_quantity(text, quantity)?;
    Ok(quantity)
}

/// Reads a quantity from JSON: a decimal string or a JSON integer (`3`); `1.5` as a JSON number is
/// refused, `"1.5"` is accepted.
pub fn quantity_from_json(value: &Value) -> Result<Decimal, MoneyError> {
    let (quantity, text) =
        decimal_from_json("quantity", value, MAX_QUANTITY_DECIMALS, MAX_QUANTITY)?;
    check_quantity(&text, quantity)?;
    Ok(quantity)
}

fn check_quantity(text: &str, quantity: Decimal) -> Result<(), MoneyError> {
    if quantity.is_sign_negative() && !quantity.is_zero() {
        return Err(MoneyError::Negative {
            what: "quantity",
            text: text.to_owned(),
        });
    }
    if quantity.is_zero() {
        return Err(MoneyError::ZeroQuantity { max: MAX_QUANTITY });
    }
    if quantity > Decimal::from(MAX_QUANTITY) {
        return Err(MoneyError::TooLarge {
            what: "quantity",
            text: text.to_owned(),
            max: MAX_QUANTITY.to_string(),
        });
    }
    check_decimals("quantity", text, quantity, MAX_QUANTITY_DECIMALS)
}

/// Non-negative, at most [`MAX_AMOUNT`], at most `max_decimals` decimals.
fn check_value(
    what: &'static str,
    text: &str,
    value: Decimal,
    max_decimals: u32,
) -> Result<(), MoneyError> {
    if value.is_sign_negative() && !value.is_zero() {
        return Err(MoneyError::Negative {
            what,
            text: text.to_owned(),
        });
    }
    check_max(what, value)?;
    check_decimals(what, text, value, max_decimals)
}

fn check_max(what: &'static str, value: Decimal) -> Result<(), MoneyError> {
    if value > Decimal::from(MAX_AMOUNT) {
        Err(too_large(what, value.to_string()))
    } else {
        Ok(())
    }
}

fn too_large(what: &'static str, text: String) -> MoneyError {
    MoneyError::TooLarge {
        what,
        text,
        max: MAX_AMOUNT.to_string(),
    }
}

/// Decimal places without trailing zeros: `19.990` has 2.
fn check_decimals(
    what: &'static str,
    text: &str,
    value: Decimal,
    max: u32,
) -> Result<(), MoneyError> {
    let decimals = value.normalize().scale();
    if decimals > max {
        Err(MoneyError::TooManyDecimals {
            what,
            text: text.to_owned(),
            decimals,
            max,
        })
    } else {
        Ok(())
    }
}

/// Digits, optionally `.` and more digits; nothing else. Leading and trailing whitespace is
/// refused too, so what is stored is what was sent. Huge inputs are refused before parsing so
/// that no precision is lost silently.
fn parse_plain(
    what: &'static str,
    text: &str,
    max_decimals: u32,
    max: i64,
) -> Result<Decimal, MoneyError> {
    let not_a_decimal = || MoneyError::NotADecimal {
        what,
        text: text.to_owned(),
    };
    if let Some(rest) = text.strip_prefix('-')
        && is_plain(rest)
    {
        return Err(MoneyError::Negative {
            what,
            text: text.to_owned(),
        });
    }
    if !is_plain(text) {
        return Err(not_a_decimal());
    }
    let (int_part, frac_part) = text.split_once('.').unwrap_or((text, ""));
    if int_part.trim_start_matches('0').len() > 15 {
        return Err(MoneyError::TooLarge {
            what,
            text: text.to_owned(),
            max: max.to_string(),
        });
    }
    let frac_significant = frac_part.trim_end_matches('0');
    if frac_significant.len() > max_decimals as usize {
        return Err(MoneyError::TooManyDecimals {
            what,
            text: text.to_owned(),
            decimals: u32::try_from(frac_significant.len()).unwrap_or(u32::MAX),
            max: max_decimals,
        });
    }
    let canonical = if frac_significant.is_empty() {
        int_part.to_owned()
    } else {
        format!("{int_part}.{frac_significant}")
    };
    canonical.parse::<Decimal>().map_err(|_| not_a_decimal())
}

fn is_plain(text: &str) -> bool {
    let (int_part, frac_part) = match text.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (text, None),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    digits(int_part) && frac_part.is_none_or(digits)
}

/// A decimal from a JSON string or integer, with the text to quote in errors.
fn decimal_from_json(
    what: &'static str,
    value: &Value,
    max_decimals: u32,
    max: i64,
) -> Result<(Decimal, String), MoneyError> {
    match value {
        Value::String(text) => Ok((parse_plain(what, text, max_decimals, max)?, text.clone())),
        Value::Number(number) => {
            let text = number.to_string();
            if let Some(n) = number.as_u64() {
                Ok((Decimal::from(n), text))
            } else if let Some(n) = number.as_i64() {
                if n < 0 {
                    Err(MoneyError::Negative { what, text })
                } else {
                    Ok((Decimal::from(n), text))
                }
            } else {
                Err(MoneyError::FloatNumber { what, number: text })
            }
        }
        Value::Null => Err(MoneyError::WrongJsonType {
            what,
            found: "null",
        }),
        Value::Bool(_) => Err(MoneyError::WrongJsonType {
            what,
            found: "a boolean",
        }),
        Value::Array(_) => Err(MoneyError::WrongJsonType {
            what,
            found: "an array",
        }),
        Value::Object(_) => Err(MoneyError::WrongJsonType {
            what,
            found: "an object",
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn d(text: &str) -> Decimal {
        text.parse().expect("decimal literal in test")
    }

    fn line(quantity: &str, unit_price: &str) -> Line {
        Line::parse("Service", quantity, unit_price).expect("valid line in test")
    }

    fn rate(text: &str) -> TaxRate {
        TaxRate::parse(text).expect("valid rate in test")
    }

    #[test]
    fn three_times_19_99_at_19_percent() {
        let totals =
            compute_totals(&[line("3", "19.99")], Currency::Eur, rate("19")).expect("totals");
        assert_eq!(totals.net.amount(), d("59.97"));
        assert_eq!(totals.tax.amount(), d("11.39"));
        assert_eq!(totals.gross.amount(), d("71.36"));
        assert_eq!(totals.gross.minor_units(), 7136);
        let view = serde_json::to_value(totals.view()).expect("json");
        assert_eq!(
            view,
            json!({
                "currency": "EUR",
                "tax_rate": "19",
                "line_totals": [{"amount": "59.97", "minor_units": 5997, "currency": "EUR"}],
                "net": {"amount": "59.97", "minor_units": 5997, "currency": "EUR"},
                "tax": {"amount": "11.39", "minor_units": 1139, "currency": "EUR"},
                "gross": {"amount": "71.36", "minor_units": 7136, "currency": "EUR"},
            })
        );
    }

    #[test]
    fn amounts_show_exactly_the_currency_decimals() {
        let totals = compute_totals(
            &[line("2", "10"), line("1", "0.5")],
            Currency::Usd,
            rate("0"),
        )
        .expect("totals");
        let view = totals.view();
        assert_eq!(view.line_totals[0].amount, "20.00");
        assert_eq!(view.line_totals[1].amount, "0.50");
        assert_eq!(view.net.amount, "20.50");
        assert_eq!(view.tax.amount, "0.00");
        assert_eq!(view.tax.minor_units, 0);
        assert_eq!(view.gross.amount, "20.50");
    }

    #[test]
    fn yen_has_no_decimals() {
        let totals =
            compute_totals(&[line("3", "1500")], Currency::Jpy, rate("10")).expect("totals");
        let view = totals.view();
        assert_eq!(view.net.amount, "4500");
        assert_eq!(view.net.minor_units, 4500);
        assert_eq!(view.tax.amount, "450");
        assert_eq!(view.gross.amount, "4950");
        // A unit price may carry decimals; the line total is rounded to whole yen, half up.
        let totals =
            compute_totals(&[line("1", "1500.5")], Currency::Jpy, rate("8")).expect("totals");
        assert_eq!(totals.net.minor_units(), 1501);
        // 1501 × 0.08 = 120.08 → 120
        assert_eq!(totals.tax.minor_units(), 120);
        assert_eq!(
            Money::parse("1500.5", Currency::Jpy),
            Err(MoneyError::TooManyDecimals {
                what: "amount",
                text: "1500.5".into(),
                decimals: 1,
                max: 0,
            })
        );
        assert_eq!(
            Money::from_minor(1500, Currency::Jpy)
                .expect("yen")
                .view()
                .amount,
            "1500"
        );
    }

    #[test]
    fn half_cents_round_up() {
        // Line: 3 × 0.335 = 1.005 → 1.01.
        let totals =
            compute_totals(&[line("3", "0.335")], Currency::Eur, rate("0")).expect("totals");
        assert_eq!(totals.net.amount(), d("1.01"));
        // Just below the midpoint goes down: 1 × 1.004999 → 1.00.
        let totals =
            compute_totals(&[line("1", "1.004999")], Currency::Eur, rate("0")).expect("totals");
        assert_eq!(totals.net.amount(), d("1.00"));
        // Tax: 0.05 × 10 % = 0.005 → 0.01 (banker's rounding would give 0.00).
        let totals =
            compute_totals(&[line("1", "0.05")], Currency::Eur, rate("10")).expect("totals");
        assert_eq!(totals.tax.amount(), d("0.01"));
        // Tax: 0.15 × 10 % = 0.015 → 0.02.
        let totals =
            compute_totals(&[line("1", "0.15")], Currency::Eur, rate("10")).expect("totals");
        assert_eq!(totals.tax.amount(), d("0.02"));
        assert_eq!(Currency::Eur.round(d("2.675")), d("2.68"));
    }

    #[test]
    fn net_is_the_sum_of_rounded_lines() {
        // 0.004 + 0.004 + 0.004: each line rounds to 0.00 on its own.
        let lines = [line("1", "0.004"), line("1", "0.004"), line("1", "0.004")];
        let totals = compute_totals(&lines, Currency::Eur, rate("7.5")).expect("totals");
        assert_eq!(totals.net.amount(), Decimal::ZERO);
        let lines = [line("1.5", "9.99"), line("0.25", "80")];
        // 14.985 → 14.99; 20.00; net 34.99; tax 7.5 % = 2.624250 → 2.62; gross 37.61.
        let totals = compute_totals(&lines, Currency::Eur, rate("7.5")).expect("totals");
        assert_eq!(totals.line_totals[0].amount(), d("14.99"));
        assert_eq!(totals.net.amount(), d("34.99"));
        assert_eq!(totals.tax.amount(), d("2.62"));
        assert_eq!(totals.gross.amount(), d("37.61"));
        assert_eq!(totals.view().tax_rate, "7.5");
    }

    #[test]
    fn plain_decimals_only() {
        assert_eq!(parse_amount("19.99"), Ok(d("19.99")));
        assert_eq!(parse_amount("0"), Ok(Decimal::ZERO));
        assert_eq!(parse_amount("007.50"), Ok(d("7.5")));
        assert_eq!(parse_amount("19.990000000"), Ok(d("19.99")));
        for text in [
            "1,000.50", "1.000,50", "19,99", "1e3", "+5", " 5", "5 ", "5.", ".5", "", "€5",
            "5 EUR", "NaN", "١٢", "1_000",
        ] {
            let err = parse_amount(text).unwrap_err();
            assert!(
                matches!(err, MoneyError::NotADecimal { .. }),
                "{text}: {err:?}"
            );
            assert!(err.to_string().contains("\"1000.50\""), "{err}");
        }
        assert!(matches!(
            parse_amount("-5"),
            Err(MoneyError::Negative { .. })
        ));
        assert!(matches!(
            parse_amount("1.1234567"),
            Err(MoneyError::TooManyDecimals {
                decimals: 7,
                max: 6,
                ..
            })
        ));
        assert!(matches!(
            parse_amount("1000000000000.01"),
            Err(MoneyError::TooLarge { .. })
        ));
        assert_eq!(parse_amount("1000000000000"), Ok(d("1000000000000")));
        assert!(matches!(
            parse_amount("99999999999999999999999999999999999"),
            Err(MoneyError::TooLarge { .. })
        ));
        assert!(matches!(
            parse_amount("1.0000000000000000000000000000001"),
            Err(MoneyError::TooManyDecimals { .. })
        ));
    }

    #[test]
    fn json_floats_are_refused() {
        let err = amount_from_json(&json!(19.99)).unwrap_err();
        assert_eq!(
            err,
            MoneyError::FloatNumber {
                what: "amount",
                number: "19.99".into()
            }
        );
        assert!(err.to_string().contains("\"19.99\""), "{err}");
        assert_eq!(
            serde_json::to_value(&err).expect("json")["code"],
            "float_number"
        );
        assert!(matches!(
            amount_from_json(&json!(20.0)),
            Err(MoneyError::FloatNumber { .. })
        ));
        assert_eq!(amount_from_json(&json!("19.99")), Ok(d("19.99")));
        assert_eq!(amount_from_json(&json!(20)), Ok(d("20")));
        assert!(matches!(
            amount_from_json(&json!(-20)),
            Err(MoneyError::Negative { .. })
        ));
        assert!(matches!(
            amount_from_json(&json!(true)),
            Err(MoneyError::WrongJsonType { .. })
        ));
        assert!(matches!(
            amount_from_json(&Value::Null),
            Err(MoneyError::WrongJsonType { .. })
        ));
        assert_eq!(quantity_from_json(&json!(3)), Ok(d("3")));
        assert_eq!(quantity_from_json(&json!("1.5")), Ok(d("1.5")));
        assert!(matches!(
            quantity_from_json(&json!(1.5)),
            Err(MoneyError::FloatNumber { .. })
        ));
        assert_eq!(
            TaxRate::from_json(&json!("7.5")).map(|r| r.percent()),
            Ok(d("7.5"))
        );
        assert!(TaxRate::from_json(&json!(7.5)).is_err());
    }

    #[test]
    fn currencies() {
        assert_eq!(Currency::parse("EUR"), Ok(Currency::Eur));
        assert_eq!(Currency::parse("JPY").map(Currency::exponent), Ok(0));
        for code in ["EUR", "USD", "GBP", "CHF", "SEK"] {
            assert_eq!(
                Currency::parse(code).map(Currency::exponent),
                Ok(2),
                "{code}"
            );
        }
        for code in ["eur", "XYZ", "", "EURO", "€"] {
            let err = Currency::parse(code).unwrap_err();
            assert!(matches!(err, MoneyError::UnknownCurrency { .. }), "{code}");
            let text = err.to_string();
            assert!(text.contains(&format!("\"{code}\"")), "{text}");
            assert!(text.contains("EUR, USD, GBP"), "{text}");
        }
        assert_eq!(
            serde_json::to_value(Currency::Chf).expect("json"),
            json!("CHF")
        );
    }

    #[test]
    fn money_from_minor_and_parse() {
        let m = Money::from_minor(1999, Currency::Eur).expect("money");
        assert_eq!(m.amount(), d("19.99"));
        assert_eq!(m.to_string(), "19.99 EUR");
        assert_eq!(
            serde_json::to_value(m.view()).expect("json"),
            json!({"amount": "19.99", "minor_units": 1999, "currency": "EUR"})
        );
        assert_eq!(Money::parse("19.99", Currency::Eur), Ok(m));
        assert_eq!(Money::parse("19.990", Currency::Eur), Ok(m));
        assert_eq!(
            Money::parse("5", Currency::Eur).map(|m| m.minor_units()),
            Ok(500)
        );
        assert!(matches!(
            Money::parse("19.999", Currency::Eur),
            Err(MoneyError::TooManyDecimals { max: 2, .. })
        ));
        assert!(matches!(
            Money::from_minor(-1, Currency::Eur),
            Err(MoneyError::Negative { .. })
        ));
        assert!(Money::from_minor(100_000_000_000_000, Currency::Eur).is_ok());
        assert!(matches!(
            Money::from_minor(100_000_000_000_001, Currency::Eur),
            Err(MoneyError::TooLarge { .. })
        ));
        assert!(Money::from_minor(i64::MAX, Currency::Jpy).is_err());
        assert_eq!(Money::zero(Currency::Sek).view().amount, "0.00");
    }

    #[test]
    fn tax_rates_are_validated() {
        assert_eq!(rate("19").percent(), d("19"));
        assert_eq!(rate("19").fraction(), d("0.19"));
        assert_eq!(rate("7.50").to_string(), "7.5");
        assert_eq!(rate("100").percent(), d("100"));
        assert_eq!(rate("0").percent(), Decimal::ZERO);
        assert!(matches!(
            TaxRate::parse("100.01"),
            Err(MoneyError::TaxRateOutOfRange { .. })
        ));
        assert!(matches!(
            TaxRate::parse("-1"),
            Err(MoneyError::Negative { .. })
        ));
        assert!(matches!(
            TaxRate::parse("19%"),
            Err(MoneyError::NotADecimal { .. })
        ));
        assert!(matches!(
            TaxRate::parse("0.19"),
            Ok(r) if r.percent() == d("0.19")
        ));
        assert!(matches!(
            TaxRate::parse("7.12345"),
            Err(MoneyError::TooManyDecimals { .. })
        ));
        let err = TaxRate::parse("119").unwrap_err();
        assert!(err.to_string().contains("\"19\" for 19 %"), "{err}");
    }

    #[test]
    fn quantities_are_validated() {
        assert_eq!(parse_quantity("10000"), Ok(d("10000")));
        assert_eq!(parse_quantity("0.125"), Ok(d("0.125")));
        assert!(matches!(
            parse_quantity("0"),
            Err(MoneyError::ZeroQuantity { .. })
        ));
        assert!(matches!(
            parse_quantity("0.000"),
            Err(MoneyError::ZeroQuantity { .. })
        ));
        assert!(matches!(
            parse_quantity("10000.001"),
            Err(MoneyError::TooLarge { .. })
        ));
        assert!(matches!(
            parse_quantity("1.0001"),
            Err(MoneyError::TooManyDecimals { max: 3, .. })
        ));
        assert!(matches!(
            parse_quantity("-1"),
            Err(MoneyError::Negative { .. })
        ));
    }

    #[test]
    fn quotes_are_validated() {
        let r = rate("19");
        assert_eq!(
            compute_totals(&[], Currency::Eur, r),
            Err(MoneyError::NoLines)
        );
        let many = vec![line("1", "1"); MAX_LINES + 1];
        assert_eq!(
            compute_totals(&many, Currency::Eur, r),
            Err(MoneyError::TooManyLines {
                count: 101,
                max: 100
            })
        );
        assert!(compute_totals(&many[..MAX_LINES], Currency::Eur, r).is_ok());

        // Lines built directly (not via Line::parse) are validated too, with their index.
        let bad_quantity = Line {
            description: "Pipe".into(),
            quantity: d("1.2345"),
            unit_price: d("10"),
        };
        let err = compute_totals(&[line("1", "1"), bad_quantity], Currency::Eur, r).unwrap_err();
        assert!(
            matches!(&err, MoneyError::InLine { line: 1, error } if matches!(**error, MoneyError::TooManyDecimals { .. })),
            "{err:?}"
        );
        assert!(err.to_string().starts_with("lines[1]: quantity"), "{err}");
        let json = serde_json::to_value(&err).expect("json");
        assert_eq!(json["code"], "in_line");
        assert_eq!(json["line"], 1);
        assert_eq!(json["error"]["code"], "too_many_decimals");

        let negative_price = Line {
            description: "Discount".into(),
            quantity: d("1"),
            unit_price: d("-5"),
        };
        assert!(compute_totals(&[negative_price], Currency::Eur, r).is_err());

        for description in ["", "   ", "two\nlines"] {
            let line = Line {
                description: description.into(),
                quantity: d("1"),
                unit_price: d("1"),
            };
            assert!(
                matches!(
                    compute_totals(&[line], Currency::Eur, r),
                    Err(MoneyError::InLine { .. })
                ),
                "{description:?}"
            );
        }
        assert!(matches!(
            Line::parse(&"x".repeat(MAX_DESCRIPTION_CHARS + 1), "1", "1"),
            Err(MoneyError::InvalidDescription { .. })
        ));

        // 10 000 × 10^12 is far above the limit for a line total.
        let huge = Line::parse("Gold", "10000", "1000000000000").expect("inputs in range");
        assert!(matches!(
            compute_totals(&[huge], Currency::Eur, r),
            Err(MoneyError::InLine { line: 0, .. })
        ));
        // Gross above the limit after tax.
        let at_limit = Line::parse("Big", "1", "1000000000000").expect("inputs in range");
        assert!(matches!(
            compute_totals(std::slice::from_ref(&at_limit), Currency::Eur, r),
            Err(MoneyError::TooLarge { what: "gross", .. })
        ));
        assert!(compute_totals(&[at_limit], Currency::Eur, rate("0")).is_ok());
    }
}
