//! The MCP endpoint on Cloudflare Workers (ADR 20).
//!
//! The same app as every other entry point (`app::build`: pipeline, credentials, gates, the
//! booking tools), built for each request on a [`store::remote::RemoteStore`] whose messages
//! go to one Durable Object ([`durable::StoreObject`]) that keeps the items in its SQLite
//! database and runs each operation alone ([`store::remote::serve`]). Time is the host's
//! (`Date.now()`), randomness the host's `crypto.getRandomValues`, the deadline timer
//! `setTimeout`, and work after the answer runs under the request's `waitUntil`.
//!
//! Routes: the MCP endpoint and its metadata (the app's), `/healthz` ("ok", or only
//! "misconfigured" to the world, the problems in the log), and `POST /admin/store` ([`admin`]),
//! which hands a store message to the object: for the CLI with the deployment's admin token
//! (a secret; without it the route does not exist). The test build (`--features test-routes`,
//! `tests/edge.sh` only) opens it to the tests and lets each request pick its store object; no
//! variable does.
#![cfg(target_arch = "wasm32")]

mod admin;
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
            Err(problem) => misconfigured(&problem),
        },
        STORE_PATH => admin::handle(req, &env).await,
        _ => match assembly::check(&env) {
            Ok(()) => assembly::serve(req, env, ctx).await,
            Err(problem) => misconfigured(&problem),
        },
    }
}

/// The answer of a deployment whose settings are wrong: only that, to anyone; what is wrong goes
/// to the log, where the deployment's owner reads it.
fn misconfigured(problem: &str) -> Result<Response> {
    tracing::error!("misconfigured: {problem}");
    Response::error("misconfigured", 500)
}
