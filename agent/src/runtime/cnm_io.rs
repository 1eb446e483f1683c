//! CNMs through the switch's port interfaces instead of OpenFlow, where the ports are local Linux
//! interfaces (Open vSwitch beside the agent).
//!
//! On OVS's userspace datapath one thread forwards every packet and also executes every
//! PACKET_OUT and every upcall that turns into a packet-in; a CNM injected by PACKET_OUT and
//! delivered to the next switch's agent by packet-in cost that thread both (mininet/README.md
//! "Where the forwarding thread's time goes"). Here:
//! - **out**: the agent writes the CNM on the port the switch's transit table routes the
//!   culprit's source to ([`Session::take_port_frames`]); the frame leaves through the port's
//!   qdisc like any frame the switch sends there, and the switch does nothing for it;
//! - **in**: with the controller's `cnm_to_agent = "interface"` the plan drops CNMs arriving on
//!   fabric ports at classify ([`LearnedPlan::cnm_interface_ports`]), and the agent reads them
//!   from the port's interface with a packet socket bound to EtherType 0x22E7: the kernel hands
//!   it only CNMs (no filter runs for other frames), and the switch's only work per CNM is the
//!   drop.
//!
//! [`Session::take_port_frames`]: crate::session::Session::take_port_frames
//! [`LearnedPlan::cnm_interface_ports`]: crate::plan::LearnedPlan::cnm_interface_ports

use std::collections::{BTreeMap, BTreeSet};
use std::os::fd::AsRawFd;

use fabricflow_proto::ethernet::ethertype;
use nix::errno::Errno;
use nix::sys::socket::{recv, send, socket, AddressFamily, MsgFlags, SockFlag, SockType};
use tokio::io::unix::AsyncFd;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::emulated_cp::{bind_to_interface, ignore_outgoing};
use crate::PortNo;

/// A CNM frame read from a port's interface.
#[derive(Debug, Clone)]
pub struct InterfaceFrame {
    /// The port it arrived on.
    pub port: PortNo,
    /// The frame.
    pub frame: Vec<u8>,
}

/// One switch's CNM sockets: per sending port one socket, per receiving port a reader task.
#[derive(Debug)]
pub struct CnmInterfaces {
    send: BTreeMap<PortNo, socket2::Socket>,
    readers: Vec<JoinHandle<()>>,
}

impl CnmInterfaces {
    /// Opens a sending socket on each of `send_ports` (port, interface index) and a reader on
    /// each of `recv_ports`, which hands what it reads to `tx`. Needs a tokio runtime.
    pub fn open(
        send_ports: &[(PortNo, u32)],
        recv_ports: &[(PortNo, u32)],
        tx: &mpsc::Sender<InterfaceFrame>,
    ) -> std::io::Result<CnmInterfaces> {
        let mut io = CnmInterfaces {
            send: BTreeMap::new(),
            readers: Vec::new(),
        };
        for &(port, ifindex) in send_ports {
            // Protocol 0: the socket receives nothing.
            io.send.insert(port, packet_socket(ifindex, 0)?);
        }
        for &(port, ifindex) in recv_ports {
            let sock = register(packet_socket(ifindex, ethertype::CNM)?)?;
            io.readers
                .push(tokio::spawn(read_forever(port, sock, tx.clone())));
        }
        Ok(io)
    }

    /// The ports this switch sends CNMs on itself.
    pub fn send_ports(&self) -> BTreeSet<PortNo> {
        self.send.keys().copied().collect()
    }

    /// Writes `frame` on `port`'s interface; whether it went. A full queue drops it as it
    /// would drop any frame.
    pub fn send(&mut self, port: PortNo, frame: &[u8]) -> bool {
        let sent = self.send.get(&port).map(|s| loop {
            match send(s.as_raw_fd(), frame, MsgFlags::MSG_DONTWAIT) {
                Err(Errno::EINTR) => continue,
                r => break r,
            }
        });
        let ok = matches!(sent, Some(Ok(_)));
        if !ok {
            tracing::debug!(port, error = ?sent, "CNM not sent on the port's interface");
        }
        ok
    }
}

impl Drop for CnmInterfaces {
    fn drop(&mut self) {
        for r in &self.readers {
            r.abort();
        }
    }
}

/// Reads CNMs from `sock` (port `port`) until the receiver goes away or the socket fails.
async fn read_forever(
    port: PortNo,
    sock: AsyncFd<socket2::Socket>,
    tx: mpsc::Sender<InterfaceFrame>,
) {
    let mut buf = vec![0u8; 2048];
    loop {
        let Ok(mut ready) = sock.readable().await else {
            return;
        };
        loop {
            match recv(sock.get_ref().as_raw_fd(), &mut buf, MsgFlags::MSG_DONTWAIT) {
                Ok(n) => {
                    let frame = buf.get(..n).unwrap_or_default().to_vec();
                    if tx.send(InterfaceFrame { port, frame }).await.is_err() {
                        return;
                    }
                }
                Err(Errno::EINTR) => {}
                Err(Errno::EAGAIN) => {
                    ready.clear_ready();
                    break;
                }
                Err(e) => {
                    tracing::warn!(port, error = %e, "CNM socket failed: no more CNMs read here");
                    return;
                }
            }
        }
    }
}

/// `sock` registered with tokio's reactor.
#[allow(unsafe_code)]
fn register(sock: socket2::Socket) -> std::io::Result<AsyncFd<socket2::Socket>> {
    // SAFETY: the `Socket` owns its descriptor, which stays open and the same until the
    // `AsyncFd` (its only owner) drops it.
    unsafe { AsyncFd::register(sock) }.map_err(std::io::Error::from)
}

/// A non-blocking packet socket on interface `ifindex` that receives frames of EtherType
/// `protocol` arriving there (0: none) and never its own or the switch's transmissions.
fn packet_socket(ifindex: u32, protocol: u16) -> std::io::Result<socket2::Socket> {
    let fd = socket(
        AddressFamily::Packet,
        SockType::Raw,
        SockFlag::SOCK_CLOEXEC | SockFlag::SOCK_NONBLOCK,
        None,
    )?;
    ignore_outgoing(&fd)?;
    bind_to_interface(&fd, ifindex, protocol)?;
    Ok(socket2::Socket::from(fd))
}
