//! The one integration test binary of the workspace.

// Tests fail loudly on the first surprise; `clippy.toml`'s test allowance does not reach this
// target (rust-clippy#13981).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod administration;
mod api_parity;
mod approval_modes;
mod big_numbers;
mod booking_tools;
mod browser;
mod claims;
mod clock_skew;
mod conformance_product;
mod docs;
mod edge;
mod edge_scale;
mod embedded_store;
mod endpoint;
mod gates;
mod hint_follower;
mod http_retries;
mod identity_contract;
mod infra;
mod keys;
mod lambda_runtime;
mod load;
mod located_credentials;
mod logs;
mod manifest;
mod model_check;
mod model_text;
mod names;
mod next_calls;
mod oauth_keys;
mod operator;
mod outbox;
mod processes;
mod product_seam;
mod release_hygiene;
mod rollout;
mod round_trips;
mod security;
mod security_processes;
mod slot_releases;
mod store_conformance;
mod store_faults;
mod store_model;
mod support;
mod transports;
mod untrusted_text;
mod web;
mod workspace;
mod world;
