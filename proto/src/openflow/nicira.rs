//! The Nicira (Open vSwitch) experimenter messages fabricflow uses. Layout: the OpenFlow header,
//! `vendor` = [`NX_VENDOR_ID`](super::NX_VENDOR_ID), a u32 `subtype`, then the body below.

use serde::Serialize;

use super::layout::ofp_struct;

/// `NXT_SET_CONTROLLER_ID` subtype.
pub const NXT_SET_CONTROLLER_ID: u32 = 20;

ofp_struct! {
    /// `NXT_SET_CONTROLLER_ID` body (`struct nx_controller_id` after the Nicira header): sets the
    /// connection's controller id, so the switch sends it only the packet-ins of
    /// `controller(id=...)` actions naming it.
    #[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
    pub struct SetControllerId("nx_controller_id", 8 bytes) {
        zero: [u8; 6],
        pub controller_id: u16,
    }
}

#[cfg(test)]
pub mod arb {
    use super::*;
    use proptest::prelude::*;

    pub fn any_set_controller_id() -> impl Strategy<Value = SetControllerId> {
        any::<u16>().prop_map(|controller_id| SetControllerId { controller_id })
    }
}
