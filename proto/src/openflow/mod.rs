//! OpenFlow 1.3 (wire version 0x04) messages and structures, one module per family.
//!
//! Message bodies implement [`crate::Wire`] for the bytes after the 8-byte header; the
//! [`message::Message`] envelope adds the header and dispatches on the type.
//!
//! Ownership of modules (for contributors): structures shared by many messages live in
//! `oxm`, `action`, `instruction`, `port`, `group`, `meter`; the messages built from them in
//! `flow`, `packet`, `table`; the envelope and everything else in `header`, `message`,
//! `symmetric`, `switch`, `multipart`, `table_features`, `nicira`, `bundle`, `print`.

pub mod action;
pub mod bundle;
pub mod channel;
pub mod flow;
pub mod framer;
pub mod group;
pub mod header;
pub mod instruction;
mod layout;
pub mod message;
pub mod meter;
pub mod multipart;
pub mod nicira;
pub mod oxm;
pub mod packet;
pub mod port;
pub mod print;
pub mod switch;
pub mod symmetric;
pub mod table;
pub mod table_features;
mod tlv;

/// OpenFlow 1.3 wire version.
pub const OFP_VERSION: u8 = 0x04;
/// Nicira's experimenter id (OUI 00:23:20), used by Open vSwitch extensions.
pub const NX_VENDOR_ID: u32 = 0x0000_2320;
/// ONF's experimenter id, used by the OpenFlow 1.3 bundle extension (EXT-230).
pub const ONF_EXPERIMENTER_ID: u32 = 0x4f4e_4600;
