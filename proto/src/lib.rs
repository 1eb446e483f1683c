//! Wire formats for fabricflow, sans-I/O: no sockets, no tokio, no clocks.
//!
//! - [`openflow`]: OpenFlow 1.3 (wire version 0x04), every message of the specification, plus the
//!   Nicira and ONF extensions fabricflow uses on Open vSwitch. Anything else that is
//!   experimenter-defined decodes to an opaque value that re-encodes byte for byte.
//! - [`openflow::framer`] cuts a TCP byte stream into OpenFlow messages; [`openflow::channel`] is
//!   the controller end of a connection built on it.
//! - [`ethernet`], [`arp`], [`lldp`], [`cnm`]: the frames the controller and agent build and parse.
//!
//! Every decoder returns a typed [`DecodeError`] carrying the byte offset of the fault; no input
//! makes a decoder panic. Decoders are nom parsers; encoders write into [`bytes::BytesMut`].

pub mod arp;
pub mod cnm;
pub mod conventions;
pub mod error;
pub mod ethernet;
pub mod lldp;
pub mod mac;
pub mod openflow;
pub mod select_slots;
pub mod select_weights;
pub mod wire;

pub use error::{DecodeError, ErrorKind};
pub use mac::MacAddr;
pub use wire::Wire;
