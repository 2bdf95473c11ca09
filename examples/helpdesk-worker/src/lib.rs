//! The helpdesk's MCP endpoint on Cloudflare Workers: `gatehouse_edge` with the helpdesk, as a
//! team's own Worker is written. `wrangler.toml` binds the store object class re-exported here.
#![cfg(target_arch = "wasm32")]

use worker::{Context, Env, Request, Response, Result, event};

pub use gatehouse_edge::StoreObject;

#[event(fetch)]
async fn fetch(req: Request, env: Env, ctx: Context) -> Result<Response> {
    gatehouse_edge::fetch(req, env, ctx, helpdesk::Helpdesk::shared()).await
}
