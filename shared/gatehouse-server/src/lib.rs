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
//! - [`outbox_lambda::run`] (feature `outbox-lambda`): the outbox dispatcher as an AWS Lambda
//!   function; it needs no product (a message's format is the platform's).
//!
//! The Worker is `gatehouse-edge`.
//!
//! With its tools written against `gatehouse-tool`, a product needs nothing else of gatehouse:
//! the rest of the surface it builds on is re-exported here, and builds for every target (the
//! edge included) with no feature on.
//!
//! - [`product`]: the seam a product implements ([`product::Product`]), the settings and the
//!   app built from it, its demo and manifest.
//! - [`web`]: a product's JSON API routes and the pages' building blocks.
//! - [`identity`]: roles and the rights they grant, actors, connections.
//! - [`store`]: items, keys, conditions and operations a tool plans.
//! - [`outbox`]: a message a tool queues, and its limits.
//! - [`outside`]: text from third parties, and randomness.
//! - `testing` (feature `testing`): the public test client, the embedded store (and with
//!   `dynamodb` the DynamoDB one) and the manifest check, for a product's own tests.

#[cfg(feature = "cli")]
pub mod cli;
#[cfg(feature = "lambda")]
pub mod lambda;
#[cfg(feature = "outbox-lambda")]
pub mod outbox_lambda;
#[cfg(feature = "web-lambda")]
pub mod web_lambda;

/// The product seam (ADR 49): what a product supplies, and the app built from it.
pub mod product {
    pub use ::app::*;
}

/// A product's JSON API routes and the pages' building blocks.
pub mod web {
    pub use ::web::*;
}

/// Roles and the rights they grant, actors, connections.
pub mod identity {
    pub use ::identity::*;
}

/// The key-value store: items, keys, conditions, and the operations a tool plans.
pub mod store {
    pub use ::store::*;
}

/// The outbox: a message a tool queues (delivered after the commit), and its keys.
pub mod outbox {
    pub use ::outbox_format::*;
}

/// Text from third parties (wrapped by construction), and randomness.
pub mod outside {
    pub use ::outside::*;
}

/// For a product's own tests: the public test client, the store backends and the manifest
/// check.
#[cfg(feature = "testing")]
pub mod testing {
    pub use ::manifest_check;
    pub use ::mcp_test_client::*;
    #[cfg(feature = "dynamodb")]
    pub use ::store_dynamodb::DynamoStore;
    pub use ::store_sqlite::SqliteStore;
}
