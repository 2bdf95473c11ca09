//! The ids every layer's public signatures take, as types: a tenant's id cannot be passed
//! where a member's is asked. They live here, in the crate every key builder depends on, so
//! that the store's key constructors, identity, accounts and the products share one type
//! (the tool-author crate re-exports them). Each is its text underneath, given up only by name
//! (`as_str`, `into_string`, `Display`), and made only by name (`new`): no `Deref` or `From`
//! turns one id into another's text unnoticed. A record's id is its
//! `Handle` (in the tool-author crate).

/// Defines an id type with this module's discipline: a `String` underneath, made only by name
/// (`new`), given up only by name (`as_str`, `into_string`, `Display`), serialized as its text;
/// no `From`, `Deref` or `AsRef`. Products define their record ids with it
/// (`booking::ids::CustomerId`; re-exported by the tool-author crate).
#[macro_export]
macro_rules! typed_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
        #[derive(::serde::Serialize, ::serde::Deserialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// The id written as `text` (read from a credential, a key or a request): made
            /// only by name, so that no other id's text becomes this one unnoticed.
            pub fn new(text: impl Into<String>) -> Self {
                $name(text.into())
            }

            /// The id's text.
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// The id's text, owned.
            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl PartialEq<$name> for String {
            fn eq(&self, other: &$name) -> bool {
                *self == other.0
            }
        }
    };
}

crate::typed_id!(
    /// A workspace's (tenant's) id: the first part of every key it owns. Its text is given
    /// up by name:
    ///
    /// ```
    /// let tenant = store::TenantId::new("acme");
    /// assert_eq!(format!("{tenant}#ticket"), "acme#ticket");
    /// fn member_key(tenant: &str, member: &str) -> String { format!("{tenant}#{member}") }
    /// assert_eq!(member_key(tenant.as_str(), "ana"), "acme#ana");
    /// ```
    ///
    /// but it is neither a member's id nor, unnoticed, text:
    ///
    /// ```compile_fail
    /// fn member(id: store::MemberId) {}
    /// member(store::TenantId::new("acme"));
    /// ```
    ///
    /// ```compile_fail
    /// fn member_key(tenant: &str, member: &str) -> String { format!("{tenant}#{member}") }
    /// let (tenant, member) = (store::TenantId::new("acme"), store::MemberId::new("ana"));
    /// member_key(&member, &tenant);
    /// ```
    TenantId
);
crate::typed_id!(
    /// A member's id within a workspace.
    MemberId
);
crate::typed_id!(
    /// An MCP connection's public id.
    ConnectionId
);
