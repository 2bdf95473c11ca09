//! Where a person approves a prepared action (ADR 15): in the client (a client that prompts
//! per call shows `confirm_action`, a client that elicits asks its user) or in the product (an
//! approval link, a member with the right). Modes only ever make approval stricter.

use crate::EffectClass;

/// The `_meta` key that makes Claude Code prompt its user on every call of a tool (and deny
/// the call in a mode that never prompts).
pub const META_REQUIRES_USER_INTERACTION: &str = "anthropic/requiresUserInteraction";

/// The effect classes whose actions are prepared and approved before they execute, in the
/// order pages and the CLI list them.
pub const APPROVAL_CLASSES: [EffectClass; 4] = [
    EffectClass::Notify,
    EffectClass::Wake,
    EffectClass::Alerting,
    EffectClass::Delete,
];

/// Where a person approves actions of one effect class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ApprovalMode {
    /// In the client: the client's prompt on `confirm_action`, or elicitation.
    #[default]
    Client,
    /// Only in the product, through the approval link, by a member with the right.
    Product,
}

impl ApprovalMode {
    /// Parses `client` or `product`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "client" => Some(ApprovalMode::Client),
            "product" => Some(ApprovalMode::Product),
            _ => None,
        }
    }

    /// The name.
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalMode::Client => "client",
            ApprovalMode::Product => "product",
        }
    }
}

/// The effect classes whose actions a caller may only have approved in the product (its
/// tenant's choices, or every class for a connection pinned to the product).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ProductApproval(u8);

impl ProductApproval {
    /// Every class approved in the client (the default).
    pub const NONE: ProductApproval = ProductApproval(0);

    /// Every class approved in the product (a pinned connection).
    pub fn all() -> Self {
        APPROVAL_CLASSES
            .iter()
            .fold(Self::NONE, |modes, class| modes.with(*class))
    }

    /// These modes with `class` approved in the product.
    pub fn with(self, class: EffectClass) -> Self {
        ProductApproval(self.0 | bit(class))
    }

    /// The mode of `class`.
    pub fn mode(self, class: EffectClass) -> ApprovalMode {
        if bit(class) != 0 && self.0 & bit(class) != 0 {
            ApprovalMode::Product
        } else {
            ApprovalMode::Client
        }
    }

    /// Whether actions of `class` are approved only in the product.
    pub fn requires(self, class: EffectClass) -> bool {
        self.mode(class) == ApprovalMode::Product
    }

    /// Both sets together: the stricter of the two for every class.
    pub fn union(self, other: ProductApproval) -> Self {
        ProductApproval(self.0 | other.0)
    }
}

fn bit(class: EffectClass) -> u8 {
    APPROVAL_CLASSES
        .iter()
        .position(|c| *c == class)
        .map_or(0, |i| 1 << i)
}

/// The name of a class as settings and audit rows spell it (`notify`, `wake`, ...).
pub fn class_name(class: EffectClass) -> &'static str {
    match class {
        EffectClass::Read => "read",
        EffectClass::SilentWrite => "silent_write",
        EffectClass::Notify => "notify",
        EffectClass::Wake => "wake",
        EffectClass::Alerting => "alerting",
        EffectClass::Delete => "delete",
    }
}

/// The class of an approval class's name (`None` for read, silent write or anything else).
pub fn approval_class(name: &str) -> Option<EffectClass> {
    APPROVAL_CLASSES
        .iter()
        .copied()
        .find(|c| class_name(*c) == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_only_add_product_classes() {
        let tenant = ProductApproval::NONE.with(EffectClass::Delete);
        assert!(tenant.requires(EffectClass::Delete));
        assert!(!tenant.requires(EffectClass::Notify));
        assert!(!tenant.with(EffectClass::Read).requires(EffectClass::Read));
        let pinned = tenant.union(ProductApproval::all());
        assert!(
            APPROVAL_CLASSES
                .iter()
                .all(|c| pinned.requires(*c) && ProductApproval::all().requires(*c))
        );
        assert_eq!(approval_class("wake"), Some(EffectClass::Wake));
        assert_eq!(approval_class("read"), None);
    }
}
