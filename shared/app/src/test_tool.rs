//! TEST ONLY: `test_panic_tool`, a tool whose body panics.
//!
//! The production app has no tool that panics, yet the launch gate's failure recording
//! `server-failure` must see one (a generic error must fail the gate). This module exists only
//! in a build with the `test-tool` feature (ADR 48): `tests/run` builds the debug `gatehouse`
//! with it, whose `serve` registers the tool when `GATEHOUSE_TEST_PANIC_TOOL=1`; no release
//! build (`cargo install`, the Lambda functions, the worker) has it, whatever its variables.

use mcp_pipeline::{CallError, Success, Tool, ToolContext};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The variable that has `serve` register the tool (`1`).
pub const VAR: &str = "GATEHOUSE_TEST_PANIC_TOOL";

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
    type Effect = mcp_pipeline::effects::Read;

    async fn call(
        &self,
        _ctx: ToolContext<Self::Effect>,
        _input: PanicInput,
    ) -> Result<Success<PanicOutput>, CallError> {
        panic!("test_panic_tool panicked on purpose")
    }
}
