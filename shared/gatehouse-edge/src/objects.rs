//! Messages to the store objects: where each kind goes and how it is sent. Both sides use
//! it: the Worker (its app's store, the admin routes) and the objects themselves (a workspace
//! object asking the global one, the global one telling the workspace objects).

use worker::{Headers, Method, ObjectNamespace, Request, RequestInit, Result};

use crate::faults::Faults;

/// The Durable Object namespace binding that holds the store (wrangler.toml).
pub(crate) const STORE_BINDING: &str = "STORE";
/// The header that names the object a message is for: its own name (an object learns from it
/// whether it is a workspace's or the global one).
pub(crate) const OBJECT_HEADER: &str = "x-gatehouse-object";
/// A workspace object asks the global object for the switch here.
pub(crate) const NEWS_PATH: &str = "/switch/news";
/// The global object tells a workspace object the switch here.
pub(crate) const COPY_PATH: &str = "/switch/copy";
/// The global object reports its fan-out here.
pub(crate) const STATUS_PATH: &str = "/switch/status";
/// A page of the object's items, for a backup or a move (`store::remote::ExportAsk`).
pub(crate) const EXPORT_PATH: &str = "/export";

/// Where a store operation goes (the other paths are the objects' own exchanges).
pub(crate) const OP_PATH: &str = "/op";

/// One message to the object `name` at `path`, carrying `faults`; its answer's text.
pub(crate) async fn post_to_object(
    namespace: &ObjectNamespace,
    name: &str,
    path: &str,
    message: String,
    faults: &Faults,
) -> Result<String> {
    let stub = namespace.get_by_name(name)?;
    let headers = Headers::new();
    headers.set(OBJECT_HEADER, name)?;
    for (fault, value) in faults.headers() {
        headers.set(fault, value)?;
    }
    let mut init = RequestInit::new();
    init.with_method(Method::Post)
        .with_headers(headers)
        .with_body(Some(message.into()));
    let request = Request::new_with_init(&format!("https://store.internal{path}"), &init)?;
    let mut answer = stub.fetch_with_request(request).await?;
    answer.text().await
}
