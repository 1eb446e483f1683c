//! The Nicira (Open vSwitch) experimenter messages fabricflow uses. Layout: the OpenFlow header,
//! `vendor` = [`NX_VENDOR_ID`](super::NX_VENDOR_ID), a u32 `subtype`, then the body below.

use bytes::{BufMut, BytesMut};
use serde::Serialize;

use crate::wire::{self, PResult, Wire};

/// `NXT_SET_CONTROLLER_ID` subtype.
pub const NXT_SET_CONTROLLER_ID: u32 = 20;

/// `NXT_SET_CONTROLLER_ID` body (`struct nx_controller_id` after the Nicira header): sets the
/// connection's controller id, so the switch sends it only the packet-ins of
/// `controller(id=...)` actions naming it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct SetControllerId {
    pub controller_id: u16,
}

impl Wire for SetControllerId {
    fn decode(input: &[u8]) -> PResult<'_, Self> {
        let (i, ()) = wire::skip(input, 6, "nx_controller_id.zero")?;
        let (i, controller_id) = wire::u16_(i, "nx_controller_id.controller_id")?;
        Ok((i, SetControllerId { controller_id }))
    }
    fn encode(&self, out: &mut BytesMut) {
        wire::put_zeros(out, 6);
        out.put_u16(self.controller_id);
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
