//! What a search tool takes as its `limit`, the same for every product's searches.

use crate::ToolError;

/// The most a search shows at once.
pub const MOST_SHOWN: u32 = 50;

/// A search's `limit`, or `default`; one outside 1 to [`MOST_SHOWN`] is refused with the
/// nearest that is accepted, as the schema's range says (cutting it silently would show fewer
/// than asked without saying so).
pub fn search_limit(given: Option<u32>, default: u32) -> Result<usize, ToolError> {
    let limit = given.unwrap_or(default);
    if (1..=MOST_SHOWN).contains(&limit) {
        return Ok(limit as usize);
    }
    Err(ToolError::validation(
        format!("`limit` must be 1 to {MOST_SHOWN}, not {limit}"),
        format!("Send a limit between 1 and {MOST_SHOWN}"),
    )
    .retry_with("limit", limit.clamp(1, MOST_SHOWN)))
}
