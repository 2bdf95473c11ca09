//! The app for one request at the edge, and the conversions between the Workers runtime's
//! request and response and the `http` types the app speaks.
//!
//! The app is built per request: a Durable Object stub, the `waitUntil` of the request and the
//! timer belong to that request's I/O context, which the runtime does not let another request
//! use. Building it costs no store round trip.

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use sha2::{Digest as _, Sha256};
use store::StoreError;
use store::remote::{RemoteStore, Transport};
use worker::send::{SendFuture, SendWrapper};
use worker::{
    Context, Delay, Env, Headers, Method, ObjectNamespace, Request, RequestInit, Response, Result,
};

/// The Durable Object namespace binding that holds the store (wrangler.toml).
pub(crate) const STORE_BINDING: &str = "STORE";
/// The one object every request's store messages go to (ADR 20: one object per deployment).
const STORE_OBJECT: &str = "store";
/// With the test routes on, a request may name its own store object, so that tests sharing
/// one served worker never share data.
const TEST_OBJECT_HEADER: &str = "x-gatehouse-test-store";

/// Whether the test-only routes are on (`GATEHOUSE_TEST_ROUTES=1`, the local test setup).
pub(crate) fn test_routes(env: &Env) -> bool {
    env.var("GATEHOUSE_TEST_ROUTES")
        .is_ok_and(|v| v.to_string() == "1")
}

/// The store object of this request: the deployment's one object, or in the test setup the
/// one the request names.
fn store_object(req: &Request, env: &Env) -> String {
    let named = test_routes(env)
        .then(|| req.headers().get(TEST_OBJECT_HEADER).ok().flatten())
        .flatten()
        .filter(|name| !name.is_empty() && name.len() <= 100);
    named.unwrap_or_else(|| STORE_OBJECT.to_owned())
}

/// A variable or secret, when set and not empty.
pub(crate) fn setting(env: &Env, name: &str) -> Option<String> {
    let value = env
        .secret(name)
        .map(|s| s.to_string())
        .or_else(|_| env.var(name).map(|v| v.to_string()))
        .ok()?;
    (!value.is_empty()).then_some(value)
}

/// Sends store messages to the store object.
#[derive(Debug)]
struct DurableTransport {
    namespace: SendWrapper<ObjectNamespace>,
    object: String,
}

/// One store message to the object; its answer's text.
async fn post_to_store(
    namespace: &ObjectNamespace,
    object: &str,
    message: String,
) -> Result<String> {
    let stub = namespace.get_by_name(object)?;
    let mut init = RequestInit::new();
    init.with_method(Method::Post)
        .with_body(Some(message.into()));
    let request = Request::new_with_init("https://store.internal/op", &init)?;
    let mut answer = stub.fetch_with_request(request).await?;
    answer.text().await
}

#[async_trait::async_trait]
impl Transport for DurableTransport {
    async fn send(&self, request: String) -> std::result::Result<String, StoreError> {
        let namespace = &self.namespace.0;
        SendFuture::new(post_to_store(namespace, &self.object, request))
            .await
            .map_err(|e| StoreError::Unavailable(format!("the store object did not answer: {e}")))
    }
}

/// Whether the request may post store messages: the test setup, or the deployment's admin
/// token (compared as SHA-256 digests, so the comparison's time says nothing of the token).
fn may_administer(req: &Request, env: &Env) -> bool {
    if test_routes(env) {
        return true;
    }
    let Some(token) = setting(env, "GATEHOUSE_ADMIN_TOKEN").filter(|t| t.len() >= 32) else {
        return false;
    };
    let given = req
        .headers()
        .get("authorization")
        .ok()
        .flatten()
        .unwrap_or_default();
    let Some(given) = given.strip_prefix("Bearer ") else {
        return false;
    };
    Sha256::digest(given.as_bytes()) == Sha256::digest(token.as_bytes())
}

/// `POST /admin/store`: the message goes to the object as it came; 404 to anyone else, so
/// the route's existence says nothing.
pub(crate) async fn forward_to_store(mut req: Request, env: &Env) -> Result<Response> {
    if req.method() != Method::Post || !may_administer(&req, env) {
        return Response::error("not found", 404);
    }
    let object = store_object(&req, env);
    let message = req.text().await?;
    let namespace = env.durable_object(STORE_BINDING)?;
    Response::ok(post_to_store(&namespace, &object, message).await?)
}

/// The deployment's settings from its variables and secrets.
fn settings(env: &Env, ctx: Context) -> Result<app::Settings> {
    let state_key = setting(env, "GATEHOUSE_STATE_KEY").ok_or_else(|| {
        worker::Error::RustError(
            "GATEHOUSE_STATE_KEY is not set: every instance needs the same sealing key \
             (wrangler secret put GATEHOUSE_STATE_KEY)"
                .into(),
        )
    })?;
    let mut settings = app::Settings {
        backend: "durable-object".into(),
        state_key: Some(state_key.into_bytes()),
        sleep: Some(mcp_pipeline::Sleep(Arc::new(|d| {
            Box::pin(SendFuture::new(Delay::from(d)))
        }))),
        ..app::Settings::default()
    };
    let ctx = SendWrapper::new(ctx);
    settings.defer = Some(mcp_pipeline::Defer(Arc::new(move |work| {
        ctx.0.wait_until(work)
    })));
    if let Some(origins) = setting(env, "GATEHOUSE_ALLOWED_ORIGINS") {
        settings.allowed_origins = origins.split(',').map(|o| o.trim().to_owned()).collect();
    }
    if let Some(base) = setting(env, "GATEHOUSE_CONSOLE_BASE") {
        settings.console_base = base;
    }
    if let Some(bytes) = setting(env, "GATEHOUSE_MAX_BODY_BYTES").and_then(|b| b.parse().ok()) {
        settings.max_body_bytes = bytes;
    }
    settings.oauth = crate::keys::oauth(env)?;
    Ok(settings)
}

/// Serves one request with the app.
pub(crate) async fn serve(req: Request, env: Env, ctx: Context) -> Result<Response> {
    let settings = settings(&env, ctx)?;
    let namespace = env.durable_object(STORE_BINDING)?;
    let transport: Arc<dyn Transport> = Arc::new(DurableTransport {
        namespace: SendWrapper::new(namespace),
        object: store_object(&req, &env),
    });
    let store: Arc<dyn store::Store> = Arc::new(RemoteStore::new(transport));
    let app = app::build(&settings, store)
        .map_err(|e| worker::Error::RustError(format!("the tools did not register: {e}")))?;
    let request = into_http(req).await?;
    let response = app.http.handle(request).await;
    from_http(response).await
}

async fn into_http(mut req: Request) -> Result<http::Request<Full<Bytes>>> {
    let body = req.bytes().await?;
    let mut builder = http::Request::builder()
        .method(req.method().as_ref())
        .uri(req.url()?.as_str());
    for (name, value) in req.headers().entries() {
        builder = builder.header(name, value);
    }
    builder
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| worker::Error::RustError(format!("unreadable request: {e}")))
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
