//! What belongs to one request at the edge, found from code built once per isolate.
//!
//! The app is built once per isolate (its registry, schemas and `tools/list` text cost more than
//! the call they answer), but a Durable Object stub, a `waitUntil` and the I/O they start belong
//! to the request that made them: the runtime refuses I/O "on behalf of a different request".
//! So the app's store and its deferred work hold nothing of a request: they ask for the
//! [`RequestScope`] of the request being polled. [`InScope`] sets it for each poll of that
//! request's future (as a task-local would), so requests that interleave in one isolate each
//! see their own; work deferred past the answer is wrapped the same way with the scope of the
//! request that deferred it, and runs under that request's `waitUntil`.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context as TaskContext, Poll};

use worker::{Context, ObjectNamespace};

/// One request's own: where its store messages go, and whose `waitUntil` holds its deferred
/// work.
pub(crate) struct RequestScope {
    /// The store objects' namespace, as this request's environment binds it.
    pub(crate) namespace: ObjectNamespace,
    /// The names of the objects this request's messages go to.
    pub(crate) names: crate::names::Names,
    /// Faults the request asks its objects for (test build only; empty otherwise).
    pub(crate) faults: crate::faults::Faults,
    /// The request's execution context (`waitUntil`).
    pub(crate) ctx: Context,
}

thread_local! {
    /// The scope of the request whose future is being polled (isolates are single-threaded).
    static CURRENT: RefCell<Option<Rc<RequestScope>>> = const { RefCell::new(None) };
}

/// The scope of the request being polled; `None` outside every request's poll (a bug: the
/// store and `Defer` are only called from a request's work).
pub(crate) fn current() -> Option<Rc<RequestScope>> {
    CURRENT.with_borrow(Clone::clone)
}

/// A future that runs with `scope` as the current request's for each of its polls.
pub(crate) struct InScope<T> {
    scope: Rc<RequestScope>,
    inner: Pin<Box<dyn Future<Output = T>>>,
}

impl<T> InScope<T> {
    /// `inner`, run in `scope`.
    pub(crate) fn new(scope: Rc<RequestScope>, inner: impl Future<Output = T> + 'static) -> Self {
        InScope {
            scope,
            inner: Box::pin(inner),
        }
    }
}

impl<T> Future for InScope<T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<T> {
        let scope = Rc::clone(&self.scope);
        // Restored after the poll, so that a scope never outlives the poll it was set for.
        let outer = CURRENT.replace(Some(scope));
        let polled = self.inner.as_mut().poll(cx);
        CURRENT.set(outer);
        polled
    }
}

/// Runs `work` after the answer, under the `waitUntil` of the request being polled, in that
/// request's scope (its store messages still go where the request's did).
pub(crate) fn defer(work: futures_util::future::BoxFuture<'static, ()>) {
    match current() {
        Some(scope) => {
            let ctx = &scope.ctx;
            ctx.wait_until(InScope::new(Rc::clone(&scope), work));
        }
        None => tracing::error!("work deferred outside a request was dropped"),
    }
}
