//! TEST ONLY: `test_panic_tool`, a tool whose body panics.
//!
//! The production app has no tool that panics, yet two tests must see one: the Lambda runtime
//! contract test (`tests/it/lambda_runtime.rs`: a panic inside a tool leaves the function
//! serving and gives the client a generic error with a request id), and the launch gate's
//! failure recording `server-failure` (a generic error must fail the gate). The tool is
//! registered only when `GATEHOUSE_TEST_PANIC_TOOL=1`, by the MCP Lambda function and by
//! `gatehouse serve`; the template never sets that variable, and both log a warning at start
//! when it is set. Never set it in a deployment.

use mcp_pipeline::{CallError, EffectClass, Success, Tool, ToolContext};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The variable that registers the tool (`1`); test-only.
pub const VAR: &str = "GATEHOUSE_TEST_PANIC_TOOL";

/// Whether the tool is wanted: `1` yes, unset or empty no, anything else is a mistake.
pub fn enabled(value: Option<&str>) -> Result<bool, String> {
    match value {
        None => Ok(false),
        Some("1") => Ok(true),
        Some(other) => Err(format!(
            "{VAR}={other:?}: must be 1 or unset (it registers a test-only tool that panics)"
        )),
    }
}

/// Arguments: a note the test uses to check that arguments never reach the logs.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PanicInput {
    /// Any text; ignored.
    #[expect(
        dead_code,
        reason = "accepted so the test can pass an argument; never read"
    )]
    note: Option<String>,
}

/// Never produced.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PanicOutput {}

/// Panics. Test-only.
#[derive(Debug)]
pub struct TestPanicTool;

impl Tool for TestPanicTool {
    type Input = PanicInput;
    type Output = PanicOutput;
    const NAME: &'static str = "test_panic_tool";
    const TITLE: &'static str = "Test-only panic";
    const DESCRIPTION: &'static str = "TEST ONLY, registered when GATEHOUSE_TEST_PANIC_TOOL=1: \
        panics inside its body, to prove the server survives a panicking tool. Changes nothing. \
        Example: {}";
    const EFFECT: EffectClass = EffectClass::Read;

    async fn call(
        &self,
        _ctx: ToolContext,
        _input: PanicInput,
    ) -> Result<Success<PanicOutput>, CallError> {
        panic!("test_panic_tool panicked on purpose")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_one_enables_it() {
        assert_eq!(enabled(None), Ok(false));
        assert_eq!(enabled(Some("1")), Ok(true));
        let err = enabled(Some("yes")).unwrap_err();
        assert!(err.contains("GATEHOUSE_TEST_PANIC_TOOL"), "{err}");
    }
}
