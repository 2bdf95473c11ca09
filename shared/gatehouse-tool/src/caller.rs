//! Who is calling: the connection context bound by the transport from the credential.
//!
//! There is no ambient user: the context names the tenant, the connection, the person who
//! created it and the rights live right now, and tools pass it on as a parameter.

use std::collections::BTreeSet;

use serde::Serialize;

/// The tool catalogs a connection can be bound to; each includes the smaller ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Toolset {
    /// About twenty tools with short descriptions, for small and local models.
    Core,
    /// The everyday set.
    Standard,
    /// Everything.
    Full,
}

impl Toolset {
    /// Parses `core`, `standard` or `full`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "core" => Some(Toolset::Core),
            "standard" => Some(Toolset::Standard),
            "full" => Some(Toolset::Full),
            _ => None,
        }
    }

    /// The name.
    pub fn as_str(self) -> &'static str {
        match self {
            Toolset::Core => "core",
            Toolset::Standard => "standard",
            Toolset::Full => "full",
        }
    }
}

/// The caller of one request, as the credential and the product say right now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The one tenant this connection acts in.
    pub tenant: crate::TenantId,
    /// The connection's public id.
    pub connection: crate::ConnectionId,
    /// The member who created the connection.
    pub creator: crate::MemberId,
    /// The client name given when the connection was created.
    pub client_name: String,
    /// Effective rights: the token's rights intersected with the creator's current rights.
    pub rights: BTreeSet<String>,
    /// The catalog this connection sees.
    pub toolset: Toolset,
    /// The effect classes whose actions this caller may only have approved in the product
    /// (the tenant's choice, or every class for a connection pinned to the product).
    pub product_approval: crate::ProductApproval,
}

/// Why a registered tool is not available to a caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hidden {
    /// The connection's toolset does not include the tool.
    Toolset {
        /// The smallest toolset that has it.
        needs: Toolset,
        /// The connection's toolset.
        has: Toolset,
    },
    /// Rights the caller lacks.
    Rights(Vec<String>),
}
