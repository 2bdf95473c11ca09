//! gatehouse's entry points, generic over the product behind them (ADR 49).
//!
//! A product's binaries are a few lines each: they choose the allocator and call one runner
//! with the product.
//!
//! - [`cli::run`] (feature `cli`): the `gatehouse` command line: `serve` (HTTP), `stdio`, and
//!   administration (workspaces with the product's settings as flags, members, operators,
//!   connections, tokens, the kill switch, the manifest).
//! - [`lambda::run`] (feature `lambda`): the MCP endpoint as an AWS Lambda function.
//! - [`web_lambda::run`] (feature `web-lambda`): the product's pages and JSON API as an AWS
//!   Lambda function, on the same table.
//!
//! The outbox dispatcher needs no product (a message's format is the platform's); the Worker
//! is `functions/mcp-worker`.

#[cfg(feature = "cli")]
pub mod cli;
#[cfg(feature = "lambda")]
pub mod lambda;
#[cfg(feature = "web-lambda")]
pub mod web_lambda;
