//! OpenFlow 1.3 instructions (`ofp_instruction_*`).
//!
//! Every instruction is a TLV (type:16, length:16 including the header), its length a
//! multiple of 8. Experimenter instructions and types OpenFlow 1.3 does not define are kept
//! opaque and re-encode byte for byte.

use std::fmt;

use bytes::{BufMut, BytesMut};
use serde::Serialize;

use super::action::{decode_actions, encode_actions, Action, ActionList};
use super::tlv::{self, tlv_names, Tlv, TlvNames};
use crate::wire::{self, PResult, Wire};

pub const OFPIT_GOTO_TABLE: u16 = 1;
pub const OFPIT_WRITE_METADATA: u16 = 2;
pub const OFPIT_WRITE_ACTIONS: u16 = 3;
pub const OFPIT_APPLY_ACTIONS: u16 = 4;
pub const OFPIT_CLEAR_ACTIONS: u16 = 5;
pub const OFPIT_METER: u16 = 6;
pub const OFPIT_EXPERIMENTER: u16 = 0xffff;

/// One OpenFlow 1.3 instruction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Instruction {
    GotoTable(u8),
    WriteMetadata {
        metadata: u64,
        mask: u64,
    },
    WriteActions(Vec<Action>),
    ApplyActions(Vec<Action>),
    ClearActions,
    Meter(u32),
    /// An experimenter instruction: the id and the bytes after it, verbatim.
    Experimenter {
        experimenter: u32,
        data: Vec<u8>,
    },
    /// An instruction type OpenFlow 1.3 does not define: the bytes after type and length.
    Unknown {
        instruction_type: u16,
        body: Vec<u8>,
    },
}

impl Instruction {
    pub fn goto_table(table_id: u8) -> Self {
        Instruction::GotoTable(table_id)
    }

    pub fn apply_actions(actions: Vec<Action>) -> Self {
        Instruction::ApplyActions(actions)
    }

    pub fn write_actions(actions: Vec<Action>) -> Self {
        Instruction::WriteActions(actions)
    }

    pub fn meter(meter_id: u32) -> Self {
        Instruction::Meter(meter_id)
    }

    /// The instruction's type on the wire.
    pub fn instruction_type(&self) -> u16 {
        match self {
            Self::GotoTable(_) => OFPIT_GOTO_TABLE,
            Self::WriteMetadata { .. } => OFPIT_WRITE_METADATA,
            Self::WriteActions(_) => OFPIT_WRITE_ACTIONS,
            Self::ApplyActions(_) => OFPIT_APPLY_ACTIONS,
            Self::ClearActions => OFPIT_CLEAR_ACTIONS,
            Self::Meter(_) => OFPIT_METER,
            Self::Experimenter { .. } => OFPIT_EXPERIMENTER,
            Self::Unknown {
                instruction_type, ..
            } => *instruction_type,
        }
    }
}

const NAMES: TlvNames = tlv_names!("instruction");

fn need<'a>(input: &'a [u8], len: usize, want: usize) -> PResult<'a, ()> {
    tlv::expect_len(input, &NAMES, len, want)
}

impl Wire for Instruction {
    fn decode(input: &[u8]) -> PResult<'_, Self> {
        let (rest, Tlv { ty, len, body }) = tlv::read_tlv8(input, &NAMES)?;
        let ins = match ty {
            OFPIT_GOTO_TABLE => {
                need(input, len, 8)?;
                let (_, t) = wire::u8_(body, "goto_table table_id")?;
                Instruction::GotoTable(t)
            }
            OFPIT_WRITE_METADATA => {
                need(input, len, 24)?;
                let (b, ()) = wire::skip(body, 4, "write_metadata pad")?;
                let (b, metadata) = wire::u64_(b, "write_metadata metadata")?;
                let (_, mask) = wire::u64_(b, "write_metadata mask")?;
                Instruction::WriteMetadata { metadata, mask }
            }
            OFPIT_WRITE_ACTIONS | OFPIT_APPLY_ACTIONS => {
                let (_, actions) = decode_actions(body.get(4..).unwrap_or_default())?;
                if ty == OFPIT_WRITE_ACTIONS {
                    Instruction::WriteActions(actions)
                } else {
                    Instruction::ApplyActions(actions)
                }
            }
            OFPIT_CLEAR_ACTIONS => {
                need(input, len, 8)?;
                Instruction::ClearActions
            }
            OFPIT_METER => {
                need(input, len, 8)?;
                let (_, m) = wire::u32_(body, "meter_id")?;
                Instruction::Meter(m)
            }
            OFPIT_EXPERIMENTER => {
                let (data, experimenter) = wire::u32_(body, "experimenter id")?;
                Instruction::Experimenter {
                    experimenter,
                    data: data.to_vec(),
                }
            }
            other => Instruction::Unknown {
                instruction_type: other,
                body: body.to_vec(),
            },
        };
        Ok((rest, ins))
    }

    fn encode(&self, out: &mut BytesMut) {
        tlv::write_tlv8(out, self.instruction_type(), |out| match self {
            Self::GotoTable(t) => {
                out.put_u8(*t);
                wire::put_zeros(out, 3);
            }
            Self::WriteMetadata { metadata, mask } => {
                wire::put_zeros(out, 4);
                out.put_u64(*metadata);
                out.put_u64(*mask);
            }
            Self::WriteActions(a) | Self::ApplyActions(a) => {
                wire::put_zeros(out, 4);
                encode_actions(a, out);
            }
            Self::ClearActions => wire::put_zeros(out, 4),
            Self::Meter(m) => out.put_u32(*m),
            Self::Experimenter { experimenter, data } => {
                out.put_u32(*experimenter);
                out.put_slice(data);
            }
            Self::Unknown { body, .. } => out.put_slice(body),
        });
    }
}

impl fmt::Display for Instruction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::GotoTable(t) => write!(f, "goto_table:{t}"),
            Self::WriteMetadata { metadata, mask } => {
                write!(f, "write_metadata:{metadata:#x}")?;
                if *mask != u64::MAX {
                    write!(f, "/{mask:#x}")?;
                }
                Ok(())
            }
            Self::WriteActions(a) => write!(f, "write_actions({})", ActionList(a)),
            Self::ApplyActions(a) => write!(f, "apply_actions({})", ActionList(a)),
            Self::ClearActions => f.write_str("clear_actions"),
            Self::Meter(m) => write!(f, "meter:{m}"),
            Self::Experimenter { experimenter, data } => {
                write!(f, "experimenter({experimenter:#010x},data=0x")?;
                for b in data {
                    write!(f, "{b:02x}")?;
                }
                f.write_str(")")
            }
            Self::Unknown {
                instruction_type,
                body,
            } => {
                write!(f, "unknown_instruction(type={instruction_type},body=0x")?;
                for b in body {
                    write!(f, "{b:02x}")?;
                }
                f.write_str(")")
            }
        }
    }
}

/// Displays instructions `ovs-ofctl` style: apply-actions inline, others by name; `drop`
/// when there is nothing to do.
#[derive(Debug, Clone, Copy)]
pub struct InstructionList<'a>(pub &'a [Instruction]);

impl fmt::Display for InstructionList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for i in self.0 {
            if let Instruction::ApplyActions(a) = i {
                if a.is_empty() {
                    continue;
                }
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            match i {
                Instruction::ApplyActions(a) => write!(f, "{}", ActionList(a))?,
                other => write!(f, "{other}")?,
            }
        }
        if first {
            f.write_str("drop")?;
        }
        Ok(())
    }
}

// ---- tests --------------------------------------------------------------------------------

#[cfg(test)]
pub(crate) mod arb {
    use super::*;
    use crate::openflow::action::arb::any_actions;
    use proptest::collection::vec;
    use proptest::prelude::*;

    pub fn any_instruction() -> impl Strategy<Value = Instruction> {
        prop_oneof![
            any::<u8>().prop_map(Instruction::GotoTable),
            any::<(u64, u64)>()
                .prop_map(|(metadata, mask)| Instruction::WriteMetadata { metadata, mask }),
            any_actions().prop_map(Instruction::WriteActions),
            any_actions().prop_map(Instruction::ApplyActions),
            Just(Instruction::ClearActions),
            any::<u32>().prop_map(Instruction::Meter),
            (
                any::<u32>(),
                (0usize..3).prop_flat_map(|n| vec(any::<u8>(), 8 * n))
            )
                .prop_map(|(experimenter, data)| Instruction::Experimenter { experimenter, data }),
            (
                prop_oneof![Just(0u16), 7u16..0xffff],
                (0usize..3).prop_flat_map(|n| vec(any::<u8>(), 8 * n + 4))
            )
                .prop_map(|(instruction_type, body)| Instruction::Unknown {
                    instruction_type,
                    body
                }),
        ]
    }

    pub fn any_instructions() -> impl Strategy<Value = Vec<Instruction>> {
        vec(any_instruction(), 0..4)
    }
}

#[cfg(test)]
mod tests {
    use super::arb::*;
    use super::*;
    use crate::openflow::oxm::test_util::*;
    use proptest::prelude::*;

    /// Instruction of OVS tests/ofp-print.at "OFPT_FLOW_MOD - OF1.3 - flags - low verbosity":
    /// apply_actions(output:3).
    #[test]
    fn apply_actions_golden_ovs() {
        let b =
            hex_bytes("00 04 00 18 00 00 00 00 00 00 00 10 00 00 00 03 00 00 00 00 00 00 00 00");
        let i = Instruction::from_bytes(&b).unwrap();
        assert_eq!(
            i,
            Instruction::ApplyActions(vec![Action::Output {
                port: 3,
                max_len: 0
            }])
        );
        assert_eq!(i.to_string(), "apply_actions(output:3)");
        assert_eq!(&i.to_bytes()[..], &b[..]);
    }

    /// OVS tests/ofp-print.at "OFPT_FLOW_MOD - OF1.1 - low verbosity": goto_table:3
    /// (`0001 0008 03 000000`), and ofp-actions.at write_metadata payload.
    #[test]
    fn goto_and_metadata_golden_ovs() {
        let b = hex_bytes("0001 0008 03 000000");
        let i = Instruction::from_bytes(&b).unwrap();
        assert_eq!(i, Instruction::GotoTable(3));
        assert_eq!(i.to_string(), "goto_table:3");
        assert_eq!(&i.to_bytes()[..], &b[..]);
        let b = hex_bytes("0002 0018 00000000 fedcba9876543210 ffff0000ffff0000");
        let i = Instruction::from_bytes(&b).unwrap();
        assert_eq!(
            i,
            Instruction::WriteMetadata {
                metadata: 0xfedcba9876543210,
                mask: 0xffff0000ffff0000
            }
        );
        assert_eq!(
            i.to_string(),
            "write_metadata:0xfedcba9876543210/0xffff0000ffff0000"
        );
        assert_eq!(&i.to_bytes()[..], &b[..]);
    }

    #[test]
    fn list_display() {
        let l = [
            Instruction::Meter(1),
            Instruction::apply_actions(vec![Action::output(5)]),
            Instruction::goto_table(2),
        ];
        assert_eq!(
            InstructionList(&l).to_string(),
            "meter:1,output:5,goto_table:2"
        );
        assert_eq!(InstructionList(&[]).to_string(), "drop");
    }

    #[test]
    fn rejects_bad() {
        assert!(
            Instruction::from_bytes(&hex_bytes("0001 0010 03 000000 0000000000000000")).is_err()
        );
        assert!(Instruction::from_bytes(&hex_bytes("0005 0004")).is_err());
        // apply_actions whose action overruns the instruction
        let b = hex_bytes("0004 0010 00000000 0000 0010 00000003");
        let e = Instruction::from_bytes(&b).unwrap_err();
        assert_eq!(e.offset, 8);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn instruction_roundtrip(v in any_instruction()) {
            check_roundtrip(&v);
            check_truncations(&v);
            let _ = v.to_string();
        }
        #[test]
        fn instruction_random(b in proptest::collection::vec(any::<u8>(), 0..80)) {
            if let Ok((rest, i)) = Instruction::decode(&b) {
                prop_assert_eq!(i.to_bytes().len(), b.len() - rest.len());
            }
        }
    }
}
