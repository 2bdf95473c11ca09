//! The ids a product meets in the platform's public signatures, as types: a tenant's id cannot
//! be passed where a member's is asked. Each is its text underneath (`as_str`, `Deref<str>`,
//! `Display`), and is made from a `String` or `&str` where the platform reads one. A record's
//! id is its [`Handle`](crate::Handle).

use std::fmt;

macro_rules! id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
        #[derive(serde::Serialize, serde::Deserialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// The id's text.
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// The id's text, owned.
            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl std::ops::Deref for $name {
            type Target = str;

            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl std::borrow::Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<String> for $name {
            fn from(text: String) -> Self {
                $name(text)
            }
        }

        impl From<&str> for $name {
            fn from(text: &str) -> Self {
                $name(text.to_owned())
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<$name> for String {
            fn eq(&self, other: &$name) -> bool {
                *self == other.0
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }
    };
}

id!(
    /// A workspace's (tenant's) id: the first part of every key it owns. It reads as text:
    ///
    /// ```
    /// let tenant = gatehouse_tool::TenantId::from("acme");
    /// assert_eq!(format!("{tenant}#ticket"), "acme#ticket");
    /// let key: &str = &tenant;
    /// assert_eq!(key, "acme");
    /// ```
    ///
    /// but is not a member's id:
    ///
    /// ```compile_fail
    /// fn member(id: gatehouse_tool::MemberId) {}
    /// member(gatehouse_tool::TenantId::from("acme"));
    /// ```
    TenantId
);
id!(
    /// A member's id within a workspace.
    MemberId
);
id!(
    /// An MCP connection's public id.
    ConnectionId
);
