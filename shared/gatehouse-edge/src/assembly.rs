//! The app of an isolate at the edge, and the conversions between the Workers runtime's
//! request and response and the `http` types the app speaks.
//!
//! The app is built once per isolate, by its first request that finds the deployment
//! configured (a change of settings is a new deployment, so a new isolate). What belongs to a
//! request (the object its store messages go to, its `waitUntil`) is bound per request through
//! [`crate::scope`]: the app's store and deferred work hold none of it.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use crate::env::setting;
use crate::faults::Faults;
use crate::names::Names;
use crate::objects::{OP_PATH, STORE_BINDING, post_to_object};
use crate::scope::{InScope, RequestScope};
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use store::StoreError;
use store::routed::{Object, RoutedStore, Router};
use worker::send::{SendFuture, SendWrapper};
use worker::{Context, Delay, Env, Headers, ObjectNamespace, Request, Response, Result};

/// In the test build, a request may name a prefix for its objects' names, so that tests
/// sharing one served worker never share data.
#[cfg(feature = "test-routes")]
const TEST_PREFIX_HEADER: &str = "x-gatehouse-test-store";

/// The names of this request's objects: the deployment's, or in the test build (only) those
/// after the prefix the request names.
pub(crate) fn names_of(req: &Request) -> Names {
    #[cfg(feature = "test-routes")]
    if let Some(prefix) = req
        .headers()
        .get(TEST_PREFIX_HEADER)
        .ok()
        .flatten()
        .filter(|p| is_plain_name(p))
    {
        return Names::new(prefix);
    }
    let _ = req;
    Names::default()
}

/// Whether a test's prefix or object name is one the tests make: letters, digits, `-`, `_`,
/// `:` (1 to 100).
#[cfg(feature = "test-routes")]
pub(crate) fn is_plain_name(name: &str) -> bool {
    (1..=100).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b':')
}

fn unreachable_object(e: &worker::Error) -> StoreError {
    StoreError::Unavailable(format!("the store object did not answer: {e}"))
}

/// Sends store messages to the objects of the request being polled ([`crate::scope`]): the
/// store of the app built once per isolate.
#[derive(Debug)]
struct ScopedRouter;

#[async_trait::async_trait]
impl Router for ScopedRouter {
    async fn send(
        &self,
        object: &Object,
        request: String,
    ) -> std::result::Result<String, StoreError> {
        // Made in a block, so that no `Rc` of the scope is held across the await.
        let sent = {
            let Some(scope) = crate::scope::current() else {
                return Err(StoreError::Unavailable(
                    "a store message outside every request".into(),
                ));
            };
            let name = scope.names.of(object);
            SendFuture::new(async move {
                post_to_object(&scope.namespace, &name, OP_PATH, request, &scope.faults).await
            })
        };
        sent.await.map_err(|e| unreachable_object(&e))
    }
}

/// Sends store messages to the objects of one set of names (the admin route's).
#[derive(Debug)]
pub(crate) struct DurableRouter {
    namespace: SendWrapper<ObjectNamespace>,
    names: Names,
    faults: SendWrapper<Faults>,
}

#[async_trait::async_trait]
impl Router for DurableRouter {
    async fn send(
        &self,
        object: &Object,
        request: String,
    ) -> std::result::Result<String, StoreError> {
        let name = self.names.of(object);
        let namespace = &self.namespace.0;
        SendFuture::new(post_to_object(
            namespace,
            &name,
            OP_PATH,
            request,
            &self.faults.0,
        ))
        .await
        .map_err(|e| unreachable_object(&e))
    }
}

/// The store over the objects `names` names, each message carrying `faults`.
pub(crate) fn routed_store(env: &Env, names: Names, faults: Faults) -> Result<RoutedStore> {
    let router = DurableRouter {
        namespace: SendWrapper::new(env.durable_object(STORE_BINDING)?),
        names,
        faults: SendWrapper::new(faults),
    };
    Ok(RoutedStore::new(Arc::new(router)))
}

/// The admin token's variable (a secret), and its shortest length: a shorter one leaves the
/// admin route off.
pub(crate) const ADMIN_TOKEN: &str = "GATEHOUSE_ADMIN_TOKEN";
pub(crate) const MIN_ADMIN_TOKEN_CHARS: usize = 32;

/// The deployment's variables and secrets, checked as the Lambda function checks its own
/// (`app::settings`), every problem named at once; a secret's value is never echoed.
pub(crate) struct Variables {
    state_key: Vec<u8>,
    allowed_origins: Vec<String>,
    console_base: Option<String>,
    max_body_bytes: usize,
}

/// Keeps `result`'s value, or its problem.
fn keep<T>(problems: &mut Vec<String>, result: std::result::Result<T, String>) -> Option<T> {
    result.map_err(|problem| problems.push(problem)).ok()
}

/// Reads and checks the deployment's variables; `Err` lists what is wrong.
pub(crate) fn variables(env: &Env) -> std::result::Result<Variables, String> {
    use app::settings::{ALLOWED_ORIGINS, CONSOLE_BASE, MAX_BODY_BYTES, STATE_KEY};
    let var = |name: &str| setting(env, name);
    let mut problems = Vec::new();
    let state_key = match var(STATE_KEY) {
        Some(key) => app::settings::state_key(key),
        None => Err(format!(
            "{STATE_KEY} is not set: every instance needs the same sealing key \
             (wrangler secret put {STATE_KEY})"
        )),
    };
    let state_key = keep(&mut problems, state_key);
    let allowed_origins = keep(&mut problems, app::settings::origins(var(ALLOWED_ORIGINS)));
    let console_base = keep(
        &mut problems,
        app::settings::console_base(var(CONSOLE_BASE)),
    );
    let max_body_bytes = keep(&mut problems, app::settings::max_body(var(MAX_BODY_BYTES)));
    if var(ADMIN_TOKEN).is_some_and(|t| t.len() < MIN_ADMIN_TOKEN_CHARS) {
        problems.push(format!(
            "{ADMIN_TOKEN} is too short (at least {MIN_ADMIN_TOKEN_CHARS} characters): \
             the admin route stays off"
        ));
    }
    if console_base.as_ref().is_some_and(Option::is_none) {
        problems.push(format!(
            "{CONSOLE_BASE} is not set: it names the product pages' public URL, where approval \
             links point (ADR 48)"
        ));
    }
    if let Err(problem) = crate::deliveries::check(env) {
        problems.push(problem);
    }
    match (state_key, allowed_origins, console_base, max_body_bytes) {
        (Some(state_key), Some(allowed_origins), Some(console_base), Some(max_body_bytes))
            if problems.is_empty() =>
        {
            Ok(Variables {
                state_key,
                allowed_origins,
                console_base,
                max_body_bytes,
            })
        }
        _ => Err(format!("invalid configuration: {}", problems.join("; "))),
    }
}

/// Whether the deployment is configured to serve: its variables (the webhook's among them)
/// and its OAuth settings (`/healthz` answers with this, so that a broken deploy is not
/// reported healthy).
pub(crate) fn check(env: &Env) -> std::result::Result<(), String> {
    variables(env)?;
    crate::keys::oauth(env).map_err(|e| e.to_string())?;
    Ok(())
}

/// The deployment's settings from its variables and secrets; deferred work runs under the
/// `waitUntil` of the request that defers it.
fn settings(env: &Env) -> Result<app::Settings> {
    let vars = variables(env).map_err(worker::Error::RustError)?;
    let mut settings = app::Settings {
        backend: "durable-object".into(),
        state_key: Some(vars.state_key),
        allowed_origins: vars.allowed_origins,
        max_body_bytes: vars.max_body_bytes,
        sleep: Some(mcp_pipeline::Sleep(Arc::new(|d| {
            Box::pin(SendFuture::new(Delay::from(d)))
        }))),
        ..app::Settings::default()
    };
    if let Some(base) = vars.console_base {
        settings.console_base = base;
    }
    settings.defer = Some(mcp_pipeline::Defer(Arc::new(crate::scope::defer)));
    settings.oauth = crate::keys::oauth(env)?;
    Ok(settings)
}

/// The app of this isolate, with the body limit its settings give.
struct Built {
    app: app::App,
    max_body_bytes: usize,
}

thread_local! {
    /// The isolate's app, once a request has built it (isolates are single-threaded).
    static BUILT: RefCell<Option<Rc<Built>>> = const { RefCell::new(None) };
}

/// The isolate's app, built now if no request has built it yet; `Err(Ok(..))` is the answer
/// of a misconfigured deployment (nothing is kept, so a fixed one serves at once).
fn built(
    env: &Env,
    product: app::SharedProduct,
) -> std::result::Result<Rc<Built>, Result<Response>> {
    if let Some(built) = BUILT.with_borrow(Clone::clone) {
        return Ok(built);
    }
    if let Err(problem) = check(env) {
        return Err(crate::misconfigured(&problem));
    }
    let settings = settings(env).map_err(Err)?;
    let store: Arc<dyn store::Store> = Arc::new(RoutedStore::new(Arc::new(ScopedRouter)));
    let app = app::build(&settings, store, product).map_err(|e| {
        Err(worker::Error::RustError(format!(
            "the tools did not register: {e}"
        )))
    })?;
    let built = Rc::new(Built {
        app,
        max_body_bytes: settings.max_body_bytes,
    });
    BUILT.set(Some(Rc::clone(&built)));
    Ok(built)
}

/// Serves one request with the isolate's app of `product`, in the request's own scope.
pub(crate) async fn serve(
    req: Request,
    env: Env,
    ctx: Context,
    product: app::SharedProduct,
) -> Result<Response> {
    let built = match built(&env, product) {
        Ok(built) => built,
        Err(answer) => return answer,
    };
    let scope = Rc::new(RequestScope {
        namespace: env.durable_object(STORE_BINDING)?,
        names: names_of(&req),
        faults: Faults::of(&req),
        ctx,
    });
    let request = into_http(req, built.max_body_bytes).await?;
    // The product's pages and JSON API (`/app`, `/api/`) on the same Worker: an approval URL
    // of an edge deployment opens here (ADR 51, step 4).
    let handling = async move {
        if web::is_product_path(request.uri().path()) {
            built.app.web.handle(request).await
        } else {
            built.app.http.handle(request).await
        }
    };
    let response = InScope::new(scope, handling).await;
    from_http(response).await
}

/// The runtime's request as the app's: its body read no further than `max_body` bytes, so
/// that an oversized body costs the isolate at most that much memory (Workers give an isolate
/// 128 MB, shared by its requests). A body declared or found larger is not read on: the app
/// gets the request with a `Content-Length` past the limit and answers 413, as everywhere.
async fn into_http(mut req: Request, max_body: usize) -> Result<http::Request<Full<Bytes>>> {
    let declared = req
        .headers()
        .get("content-length")?
        .and_then(|v| v.parse::<usize>().ok());
    let (body, over) = match declared {
        Some(n) if n > max_body => (Vec::new(), true),
        _ => read_at_most(&mut req, max_body).await?,
    };
    let mut builder = http::Request::builder()
        .method(req.method().as_ref())
        .uri(req.url()?.as_str());
    for (name, value) in req.headers().entries() {
        if !(over && name.eq_ignore_ascii_case("content-length")) {
            builder = builder.header(name, value);
        }
    }
    if over {
        builder = builder.header("content-length", (max_body + 1).to_string());
    }
    builder
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| worker::Error::RustError(format!("unreadable request: {e}")))
}

/// The body's bytes up to `max`, and whether there was more (the rest is never read).
async fn read_at_most(req: &mut Request, max: usize) -> Result<(Vec<u8>, bool)> {
    use futures_util::StreamExt as _;
    // A request without a body (a GET) has no stream.
    let Ok(mut stream) = req.stream() else {
        return Ok((Vec::new(), false));
    };
    let mut body = Vec::new();
    while let Some(chunk) = stream.next().await {
        body.extend_from_slice(&chunk?);
        if body.len() > max {
            return Ok((Vec::new(), true));
        }
    }
    Ok((body, false))
}

async fn from_http(response: http::Response<Full<Bytes>>) -> Result<Response> {
    let (parts, body) = response.into_parts();
    let bytes = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let headers = Headers::new();
    for (name, value) in &parts.headers {
        if let Ok(value) = value.to_str() {
            headers.append(name.as_str(), value)?;
        }
    }
    Ok(Response::from_bytes(bytes.to_vec())?
        .with_status(parts.status.as_u16())
        .with_headers(headers))
}
