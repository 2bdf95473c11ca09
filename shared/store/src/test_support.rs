//! What the crate's unit tests share.

use std::future::Future;
use std::task::{Context, Poll};

use crate::{Item, Value};

/// Runs `work` to its end by polling it: enough for the in-memory stores here, which never
/// wait.
pub(crate) fn block_on<F: Future>(work: F) -> F::Output {
    let mut work = std::pin::pin!(work);
    let mut cx = Context::from_waker(std::task::Waker::noop());
    loop {
        if let Poll::Ready(out) = work.as_mut().poll(&mut cx) {
            return out;
        }
    }
}

/// An item with one attribute, `v`.
pub(crate) fn item(v: &str) -> Item {
    let mut item = Item::new();
    item.insert("v".into(), Value::s(v));
    item
}
