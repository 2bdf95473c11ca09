//! The MCP endpoint on Cloudflare Workers (ADR 20).
//!
//! The same app as every other entry point (`app::build`: pipeline, credentials, gates, the
//! booking tools), built for each request on a [`store::remote::RemoteStore`] whose messages
//! go to one Durable Object ([`durable::StoreObject`]) that keeps the items in its SQLite
//! database and runs each operation alone ([`store::remote::serve`]). Time is the host's
//! (`Date.now()`), randomness the host's `crypto.getRandomValues`, the deadline timer
//! `setTimeout`, and work after the answer runs under the request's `waitUntil`.
//!
//! Routes: the MCP endpoint and its metadata (the app's), `/healthz`, and `POST /admin/store`,
//! which hands a store message straight to the object: for the CLI with the deployment's admin
//! token (`GATEHOUSE_ADMIN_TOKEN`, a secret; without it the route does not exist), and in the
//! local test configuration (`GATEHOUSE_TEST_ROUTES=1`) for the conformance suite.
#![cfg(target_arch = "wasm32")]

mod assembly;
mod durable;
mod keys;
mod logs;
mod sql_rows;

use worker::{Context, Env, Request, Response, Result, event};

pub use durable::StoreObject;

/// Where store messages are posted (the CLI with the admin token; the tests).
const STORE_PATH: &str = "/admin/store";

#[event(fetch)]
async fn fetch(req: Request, env: Env, ctx: Context) -> Result<Response> {
    logs::install();
    match req.path().as_str() {
        "/healthz" => match assembly::check(&env) {
            Ok(()) => Response::ok("ok"),
            Err(problem) => Response::error(problem, 500),
        },
        STORE_PATH => assembly::forward_to_store(req, &env).await,
        _ => assembly::serve(req, env, ctx).await,
    }
}
