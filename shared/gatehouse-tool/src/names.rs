//! Names where handles belong: a model often has a customer's or technician's name, not its
//! handle. An exact, unique name resolves to its handle (reported as a coercion in the
//! result's warnings); several records of that exact name answer with up to five candidates
//! and change nothing; no exact match answers with the search to run. A partial or fuzzy match
//! never resolves, for reads and writes alike. The product answers through [`NameResolver`];
//! the pipeline decides which arguments are handles (their schema) and when a value is a name.

use futures_util::future::BoxFuture;

use crate::outcome::Choice;
use crate::{Caller, ErrorKind, ToolError};

/// A record a name matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    /// Its handle.
    pub handle: String,
    /// How a person tells it apart (its name and email, say).
    pub label: String,
}

/// The product's answer to "which records of this kind have exactly this name?".
pub trait NameResolver: std::fmt::Debug + Send + Sync {
    /// The records of kind `noun` (`customer`, `technician`, ...) in `caller`'s tenant whose
    /// name is exactly `name` (ignoring case and surrounding space), at most six; `None` when
    /// records of that kind have no names.
    fn exactly_named<'a>(
        &'a self,
        caller: &'a Caller,
        noun: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<Vec<Named>>, ToolError>>;

    /// The call that searches records of kind `noun` for `name` (the hint when nothing has
    /// exactly that name); with an empty `name`, the call that lists that kind.
    fn search_call(&self, noun: &str, name: &str) -> Option<String>;

    /// The call that reads the record `handle` of kind `noun`, with its current version
    /// (the hint when a version is missing or stale).
    fn read_call(&self, noun: &str, handle: &str) -> Option<String> {
        let _ = (noun, handle);
        None
    }
}

/// At most this many candidates are offered when a name is not unique.
pub const MAX_CANDIDATES: usize = 5;

/// Whether `text` is in a handle's form (`cus_...`, a console link, or a bare 20-character id)
/// rather than a name.
pub fn looks_like_handle(text: &str) -> bool {
    let text = text.trim();
    if text.contains("://") {
        return true;
    }
    let bare_id =
        text.len() == crate::handle::ID_LEN && text.bytes().all(|b| b.is_ascii_alphanumeric());
    let prefixed = text.split_once('_').is_some_and(|(prefix, id)| {
        (1..=8).contains(&prefix.len())
            && prefix.bytes().all(|b| b.is_ascii_lowercase())
            && !id.contains(' ')
    });
    bare_id || prefixed
}

/// What a name resolved to, for one argument.
pub fn resolved(
    resolver: &dyn NameResolver,
    field: &str,
    noun: &str,
    name: &str,
    found: Vec<Named>,
) -> Result<(String, String), ToolError> {
    match found.as_slice() {
        [one] => Ok((
            one.handle.clone(),
            format!(
                "`{field}`: \"{name}\" read as {} ({}), the one {noun} of that exact name",
                one.handle, one.label
            ),
        )),
        [] => {
            let mut error = ToolError::new(
                ErrorKind::NotFound,
                format!(
                    "No {noun} is named exactly \"{name}\", and `{field}` takes a {noun} handle"
                ),
                format!("Search for the {noun} and call again with the handle it returns"),
            );
            if let Some(call) = resolver.search_call(noun, name) {
                error = error.next_call(call);
            }
            Err(error.detail("field", field))
        }
        several => {
            let candidates: Vec<serde_json::Value> = several
                .iter()
                .take(MAX_CANDIDATES)
                .map(|n| serde_json::json!({"handle": n.handle, "label": n.label}))
                .collect();
            let mut error = ToolError::new(
                ErrorKind::Validation,
                format!(
                    "{} {noun}s are named exactly \"{name}\"; nothing was done",
                    several.len()
                ),
                format!("Ask the user which {noun} they mean, then call again with its handle in `{field}`"),
            )
            .handover(format!("Ask the user which {noun} named \"{name}\" they mean; each option is the call for one of them"))
            .detail("field", field)
            .detail("candidates", candidates);
            for n in several.iter().take(MAX_CANDIDATES) {
                error = error.option(Choice::set(n.label.clone(), field, n.handle.clone()));
            }
            Err(error)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::looks_like_handle;

    #[test]
    fn handles_and_names_are_told_apart() {
        for handle in [
            "cus_4fK2aZ9qLm3Xt7Bv1NcR",
            "4fK2aZ9qLm3Xt7Bv1NcR",
            "https://app.example.com/customers/cus_4fK2aZ9qLm3Xt7Bv1NcR",
        ] {
            assert!(looks_like_handle(handle), "{handle}");
        }
        for name in ["Ada Lovelace", "Ada", "O'Brien", "tom_weber smith"] {
            assert!(!looks_like_handle(name), "{name}");
        }
    }
}
