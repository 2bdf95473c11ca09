//! Typed handles: a kind prefix and a random id (`bkg_V1StGXR8Z5jdHi6B`).
//!
//! A handle is accepted as the handle itself, as the bare id, or inside a console link; a
//! handle of another kind is refused with a message naming both kinds.

use std::fmt;
use std::marker::PhantomData;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A kind of object that has handles.
pub trait HandleKind: Send + Sync + 'static {
    /// The prefix before `_` (three lower-case letters by convention).
    const PREFIX: &'static str;
    /// The noun for messages ("booking").
    const NOUN: &'static str;
}

/// Length of the random part: 20 characters of 62 give about 119 bits.
pub(crate) const ID_LEN: usize = 20;

/// A handle of kind `K`.
pub struct Handle<K> {
    id: String,
    _kind: PhantomData<fn() -> K>,
}

impl<K: HandleKind> Handle<K> {
    /// A new random handle, drawn from `randomness`.
    pub fn generate_with(randomness: &dyn crate::Randomness) -> Self {
        Handle {
            id: outside::random_text(randomness, ID_LEN),
            _kind: PhantomData,
        }
    }

    /// The random part.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Reads a handle from any accepted form.
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        // A console link: take the last path segment.
        let candidate = if text.contains("://") {
            text.split(['?', '#'])
                .next()
                .unwrap_or(text)
                .trim_end_matches('/')
                .rsplit('/')
                .next()
                .unwrap_or(text)
        } else {
            text
        };
        let id = match candidate.split_once('_') {
            Some((prefix, id)) if prefix == K::PREFIX => id,
            Some((prefix, _))
                if !prefix.is_empty()
                    && prefix.len() <= 8
                    && prefix.bytes().all(|b| b.is_ascii_lowercase()) =>
            {
                return Err(format!(
                    "`{candidate}` is a `{prefix}_` handle, but this field takes a {noun} handle (`{want}_...`)",
                    noun = K::NOUN,
                    want = K::PREFIX
                ));
            }
            _ => candidate,
        };
        if id.is_empty() || id.len() > 64 || !id.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Err(format!(
                "`{text}` is not a {noun} handle; expected `{want}_` followed by letters and digits",
                noun = K::NOUN,
                want = K::PREFIX
            ));
        }
        Ok(Handle {
            id: id.to_owned(),
            _kind: PhantomData,
        })
    }
}

impl<K: HandleKind> fmt::Display for Handle<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}_{}", K::PREFIX, self.id)
    }
}

impl<K: HandleKind> fmt::Debug for Handle<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Handle({self})")
    }
}

impl<K> Clone for Handle<K> {
    fn clone(&self) -> Self {
        Handle {
            id: self.id.clone(),
            _kind: PhantomData,
        }
    }
}

impl<K> PartialEq for Handle<K> {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}
impl<K> Eq for Handle<K> {}

impl<K: HandleKind> Serialize for Handle<K> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de, K: HandleKind> Deserialize<'de> for Handle<K> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Handle::parse(&text).map_err(serde::de::Error::custom)
    }
}

impl<K: HandleKind> schemars::JsonSchema for Handle<K> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        format!("{}Handle", K::NOUN.replace(' ', "_")).into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            // A handle, or a console link naming one, is short; a longer text names nothing.
            "maxLength": 200,
            "description": format!("A {} handle, `{}_` followed by its id (the bare id or a console link also work).", K::NOUN, K::PREFIX),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Booking;
    impl HandleKind for Booking {
        const PREFIX: &'static str = "bkg";
        const NOUN: &'static str = "booking";
    }

    #[test]
    fn accepts_every_form_and_names_both_kinds() {
        let h = Handle::<Booking>::generate_with(&crate::SystemRandomness);
        assert_eq!(h.to_string().len(), 4 + ID_LEN);
        let text = h.to_string();
        assert_eq!(Handle::<Booking>::parse(&text).unwrap(), h);
        assert_eq!(Handle::<Booking>::parse(h.id()).unwrap(), h);
        let link = format!("https://app.example.com/bookings/{text}?tab=notes");
        assert_eq!(Handle::<Booking>::parse(&link).unwrap(), h);
        let err = Handle::<Booking>::parse("cus_abc").unwrap_err();
        assert!(
            err.contains("cus_") && err.contains("booking") && err.contains("bkg_"),
            "{err}"
        );
        assert!(Handle::<Booking>::parse("").is_err());
        assert!(Handle::<Booking>::parse("bkg_a b").is_err());
    }
}
