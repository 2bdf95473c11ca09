//! One store operation of an object, atomic: run inside the storage's `transactionSync`, so
//! that a failure while writing rolls back every write it made.

use std::cell::RefCell;
use std::rc::Rc;

use store::remote::{StoreAnswer, StoreRequest};
use store::{Item, StoreError};
use wasm_bindgen::JsCast as _;
use wasm_bindgen::prelude::{Closure, JsValue};

/// A store message's text, read.
pub(crate) fn parse(text: &str) -> Result<StoreRequest, StoreError> {
    serde_json::from_str::<StoreRequest>(text)
        .map_err(|e| StoreError::Unavailable(format!("unreadable store message: {e}")))
}

/// Serves one store message as one atomic operation on the object's `storage`, the global
/// switch reading as `switch_override` where there is one (`crate::mirror`); `then` runs after
/// it, in the same transaction.
pub(crate) fn serve(
    storage: &worker::Storage,
    request: StoreRequest,
    switch_override: Option<Item>,
    then: impl FnOnce(&worker::SqlStorage) -> Result<(), StoreError> + 'static,
) -> Result<StoreAnswer, StoreError> {
    let now = mcp_pipeline::Clock::now(&mcp_pipeline::SystemClock);
    run(storage, move |sql| {
        let mut rows = crate::sql_rows::SqlRows {
            sql,
            switch_override,
        };
        let answer = store::remote::serve(&mut rows, request, now)?;
        then(sql)?;
        Ok(answer)
    })
}

/// Runs `work` inside `storage.transactionSync`: a failure while writing throws, and the
/// runtime rolls every write of the operation back.
pub(crate) fn run<T: 'static>(
    storage: &worker::Storage,
    work: impl FnOnce(&worker::SqlStorage) -> Result<T, StoreError> + 'static,
) -> Result<T, StoreError> {
    let sql = storage.sql();
    let outcome: Rc<RefCell<Option<Result<T, StoreError>>>> = Rc::default();
    let slot = Rc::clone(&outcome);
    let run = Closure::once_into_js(move || -> Result<JsValue, JsValue> {
        let result = work(&sql);
        let failed_writing = matches!(&result, Err(StoreError::Unavailable(_)));
        let message = result
            .as_ref()
            .err()
            .map(|e| format!("{e:?}"))
            .unwrap_or_default();
        *slot.borrow_mut() = Some(result);
        if failed_writing {
            // Throwing rolls back what this operation wrote before the failure.
            return Err(JsValue::from_str(&message));
        }
        Ok(JsValue::UNDEFINED)
    });
    let raw: &JsValue = storage.as_raw().as_ref();
    let transaction = js_sys::Reflect::get(raw, &JsValue::from_str("transactionSync"))
        .ok()
        .and_then(|f| f.dyn_into::<js_sys::Function>().ok());
    let Some(transaction) = transaction else {
        return Err(StoreError::Unavailable(
            "storage.transactionSync is missing".into(),
        ));
    };
    let thrown = transaction.call1(raw, &run).err();
    let result = outcome.borrow_mut().take();
    match (result, thrown) {
        (Some(result), _) => result,
        (None, thrown) => Err(StoreError::Unavailable(format!(
            "the store transaction failed: {thrown:?}"
        ))),
    }
}
