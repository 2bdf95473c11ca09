//! The MCP endpoint on Cloudflare Workers (ADR 20).
//!
//! The same app as every other entry point (`app::build`: pipeline, credentials, gates, the
//! booking tools), built for each request on a [`store::remote::RemoteStore`] whose messages
//! go to one Durable Object ([`durable::StoreObject`]) that keeps the items in its SQLite
//! database and runs each operation alone ([`store::remote::serve`]). Time is the host's
//! (`Date.now()`), randomness the host's `crypto.getRandomValues`, the deadline timer
//! `setTimeout`, and work after the answer runs under the request's `waitUntil`.
//!
//! Routes: the MCP endpoint and its metadata (the app's), `/healthz`, and, only when the
//! `GATEHOUSE_TEST_ROUTES` variable is `1` (the local test configuration), `POST /__store`,
//! which hands a store message straight to the object so the conformance suite can drive it.
#![cfg(target_arch = "wasm32")]

mod assembly;
mod durable;
mod sql_rows;

use worker::{Context, Env, Request, Response, Result, event};

pub use durable::StoreObject;

/// The path the store conformance suite posts store messages to (test configuration only).
const STORE_TEST_PATH: &str = "/__store";

#[event(fetch)]
async fn fetch(req: Request, env: Env, ctx: Context) -> Result<Response> {
    match req.path().as_str() {
        "/healthz" => Response::ok("ok"),
        STORE_TEST_PATH if assembly::test_routes(&env) => {
            assembly::forward_to_store(req, &env).await
        }
        _ => assembly::serve(req, env, ctx).await,
    }
}
