//! Model evaluations for gatehouse (the "Launch gate" rule): realistic dispatcher tasks
//! played by a model against `gatehouse serve` over MCP HTTP, measured from the calls the
//! harness observes and the state it reads back, with a gate that fails when any duplicate,
//! unconfirmed or unwanted external effect, cross-tenant access or generic error is seen.
//!
//! - [`scenario`]: the tasks and recordings under `evals/`;
//! - [`server`]: a freshly seeded `gatehouse serve` per scenario (or an existing one);
//! - [`mcp`] and [`http`]: the client side of the wire;
//! - [`driver`]: scripted recordings, the Anthropic Messages API, OpenAI-compatible endpoints;
//! - [`runner`]: the agent loop with the simulated user;
//! - [`state`], [`metrics`], [`refs`]: what is measured and checked;
//! - [`report`]: the JSON report and the Markdown summary.

pub mod driver;
pub mod http;
pub mod mcp;
pub mod metrics;
pub mod refs;
pub mod report;
pub mod runner;
pub mod scenario;
pub mod server;
pub mod state;

/// `s` cut to at most `max` bytes (on a character boundary), with `...` when cut.
pub fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &s[..end])
}

#[cfg(test)]
mod tests {
    #[test]
    fn truncates_on_char_boundaries() {
        assert_eq!(super::truncate("abc", 5), "abc");
        assert_eq!(super::truncate("äbc", 1), "...");
        assert_eq!(super::truncate("abcdef", 3), "abc...");
    }
}
