//! The quote line argument shared by the quote tools.

use schemars::JsonSchema;
use serde::Deserialize;

/// One line of a quote. Amounts are decimal strings; floating-point numbers are refused.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct LineArg {
    /// What is sold.
    description: String,
    /// How many, as a decimal string ("3", "1.5").
    quantity: String,
    /// Price of one, as a decimal string ("19.99").
    unit_price: String,
}

pub(crate) fn lines(args: Vec<LineArg>) -> Vec<booking::LineInput> {
    args.into_iter()
        .map(|l| booking::LineInput {
            description: l.description,
            quantity: l.quantity,
            unit_price: l.unit_price,
        })
        .collect()
}
