//! Benchmark support, used only when asked for explicitly (`gatehouse serve --bench-tool`,
//! `--rate-limit-scale`): a trivial read tool that returns a fixed 1 KB JSON, so gatehouse can be
//! compared with other MCP servers on the same work, and raised rate limits that keep every gate
//! on. Nothing here is registered or applied by default.

use mcp_pipeline::{CallError, ClassLimits, Limits, Success, Tool, ToolContext};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The name of the benchmark tool.
pub const FIXED_TOOL: &str = "bench_fixed_1kb";

/// No arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FixedInput {}

/// A fixed payload.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FixedOutput {
    /// 1,024 bytes of text.
    pub payload: String,
}

/// The 1 KB payload every peer in the side-by-side benchmark returns.
pub fn payload() -> String {
    "x".repeat(1024)
}

/// Returns a fixed 1 KB JSON object: the same trivial work as the peers' benchmark servers.
#[derive(Debug, Default)]
pub struct BenchFixed1Kb;

impl Tool for BenchFixed1Kb {
    type Input = FixedInput;
    type Output = FixedOutput;
    const NAME: &'static str = FIXED_TOOL;
    const TITLE: &'static str = "Benchmark payload";
    const DESCRIPTION: &'static str = "Returns a fixed 1 KB payload. Exists only on servers \
        started with --bench-tool, to measure the server's own overhead; it reads and changes \
        nothing. Takes no arguments. Example: {}";
    type Effect = mcp_pipeline::effects::Read;

    async fn call(
        &self,
        _ctx: ToolContext<Self::Effect>,
        _input: FixedInput,
    ) -> Result<Success<FixedOutput>, CallError> {
        Ok(Success::new(
            "A fixed 1 KB payload.",
            FixedOutput { payload: payload() },
        ))
    }
}

/// `limits` with every rate (per connection, per tenant, per object) multiplied by `scale`,
/// saturating. Windows stay as they are and the concurrency slots stay on: every gate still
/// runs, it just refuses later. `scale` 1 returns `limits` unchanged.
pub fn scaled_limits(limits: Limits, scale: u32) -> Limits {
    let class = |c: ClassLimits| ClassLimits {
        read: c.read.saturating_mul(scale),
        expensive_read: c.expensive_read.saturating_mul(scale),
        write: c.write.saturating_mul(scale),
        notify: c.notify.saturating_mul(scale),
        wake: c.wake.saturating_mul(scale),
    };
    Limits {
        per_connection: class(limits.per_connection),
        per_tenant: class(limits.per_tenant),
        per_object_notify: limits.per_object_notify.saturating_mul(scale),
        ..limits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaling_raises_numbers_only() {
        let base = Limits::default();
        assert_eq!(scaled_limits(base, 1), base);
        let raised = scaled_limits(base, 1000);
        assert_eq!(raised.per_connection.read, base.per_connection.read * 1000);
        assert_eq!(raised.per_tenant.write, base.per_tenant.write * 1000);
        assert_eq!(raised.window_seconds, base.window_seconds);
        assert!(raised.concurrency);
        assert_eq!(scaled_limits(base, u32::MAX).per_tenant.read, u32::MAX);
    }

    #[test]
    fn the_payload_is_one_kilobyte() {
        assert_eq!(payload().len(), 1024);
    }
}
