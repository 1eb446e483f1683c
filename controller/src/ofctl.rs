//! `ovs-ofctl` text for a plan: files that load unchanged with
//! `ovs-ofctl -O OpenFlow13 add-groups BRIDGE FILE` and `… add-flows BRIDGE FILE`.
//!
//! Groups and flows are separate files because `ovs-ofctl` takes one kind per command, and
//! groups must be added before the flows that use them. [`switch_text`] prints both as two
//! sections of `#` comments for people; [`groups_text`] and [`flows_text`] are the loadable files.
//!
//! The writer spells fields and actions the way `ovs-ofctl dump-flows` prints them (`arp`,
//! `dl_dst`, `IN_PORT`, `CONTROLLER:65535`), so a dump compares with the plan after
//! [`normalize_flow_line`] / [`normalize_group_line`], which only reorder match fields and strip
//! what OVS adds or omits (statistics, bucket ids, default weights).

use std::borrow::Cow;
use std::fmt::Write as _;
use std::net::Ipv4Addr;

use fabricflow_proto::MacAddr;

use crate::plan::ir::{
    ports, Action, Bucket, Field, FieldRange, Flow, Group, GroupType, Instructions, Match,
};
use crate::plan::{ethertype, SelectLayout, SwitchPlan};
use crate::topology::PortNo;

fn port_name(p: PortNo) -> String {
    match p {
        ports::IN_PORT => "IN_PORT".to_owned(),
        ports::CONTROLLER => "CONTROLLER".to_owned(),
        _ => p.to_string(),
    }
}

fn ip_masked(v: Ipv4Addr, m: Ipv4Addr) -> String {
    let mask = u32::from(m);
    let len = mask.leading_ones();
    if mask == u32::MAX {
        v.to_string()
    } else if mask.checked_shl(len).unwrap_or(0) == 0 {
        format!("{v}/{len}")
    } else {
        format!("{v}/{m}")
    }
}

/// The match part (without trailing comma), in OVS's spelling.
pub fn match_text(m: &Match) -> String {
    let mut t: Vec<String> = Vec::new();
    match m.eth_type {
        Some(ethertype::ARP) => t.push("arp".into()),
        Some(ethertype::IPV4) => t.push("ip".into()),
        Some(e) => t.push(format!("dl_type=0x{e:04x}")),
        None => {}
    }
    if let Some(p) = m.in_port {
        t.push(format!("in_port={}", port_name(p)));
    }
    if let Some(v) = m.vlan_vid {
        t.push(format!("vlan_tci=0x{:04x}/0x{:04x}", v.value, v.mask));
    }
    if let Some(p) = m.vlan_pcp {
        t.push(format!("dl_vlan_pcp={p}"));
    }
    if let Some(d) = m.eth_src {
        if d.mask == MacAddr::BROADCAST {
            t.push(format!("dl_src={}", d.value));
        } else {
            t.push(format!("dl_src={}/{}", d.value, d.mask));
        }
    }
    if let Some(d) = m.eth_dst {
        if d.mask == MacAddr::BROADCAST {
            t.push(format!("dl_dst={}", d.value));
        } else {
            t.push(format!("dl_dst={}/{}", d.value, d.mask));
        }
    }
    if let Some(tpa) = m.arp_tpa {
        t.push(format!("arp_tpa={}", ip_masked(tpa.value, tpa.mask)));
    }
    if let Some(op) = m.arp_op {
        t.push(format!("arp_op={op}"));
    }
    t.join(",")
}

fn field_name(f: Field) -> String {
    match f {
        Field::EthSrc => "eth_src".into(),
        Field::EthDst => "eth_dst".into(),
        Field::VlanVid => "vlan_vid".into(),
        Field::VlanPcp => "vlan_pcp".into(),
        Field::IpDscp => "ip_dscp".into(),
        Field::ArpOp => "arp_op".into(),
        Field::ArpSpa => "arp_spa".into(),
        Field::ArpTpa => "arp_tpa".into(),
        Field::ArpSha => "arp_sha".into(),
        Field::ArpTha => "arp_tha".into(),
        Field::Reg(i) => format!("reg{i}"),
    }
}

fn nxm_name(f: Field) -> String {
    match f {
        Field::EthSrc => "NXM_OF_ETH_SRC".into(),
        Field::EthDst => "NXM_OF_ETH_DST".into(),
        Field::VlanVid => "OXM_OF_VLAN_VID".into(),
        Field::VlanPcp => "OXM_OF_VLAN_PCP".into(),
        Field::IpDscp => "OXM_OF_IP_DSCP".into(),
        Field::ArpOp => "NXM_OF_ARP_OP".into(),
        Field::ArpSpa => "NXM_OF_ARP_SPA".into(),
        Field::ArpTpa => "NXM_OF_ARP_TPA".into(),
        Field::ArpSha => "NXM_NX_ARP_SHA".into(),
        Field::ArpTha => "NXM_NX_ARP_THA".into(),
        Field::Reg(i) => format!("NXM_NX_REG{i}"),
    }
}

fn range_text(r: FieldRange) -> String {
    if r.ofs == 0 && r.n_bits == r.field.bits() {
        format!("{}[]", nxm_name(r.field))
    } else {
        let end = u16::from(r.ofs) + u16::from(r.n_bits).saturating_sub(1);
        format!("{}[{}..{}]", nxm_name(r.field), r.ofs, end)
    }
}

fn value_text(f: Field, v: u64) -> String {
    match f {
        Field::EthSrc | Field::EthDst | Field::ArpSha | Field::ArpTha => {
            MacAddr::from_u64(v).to_string()
        }
        Field::ArpSpa | Field::ArpTpa => Ipv4Addr::from((v & 0xffff_ffff) as u32).to_string(),
        _ => v.to_string(),
    }
}

/// One action in OVS's spelling.
pub fn action_text(a: &Action) -> String {
    match a {
        Action::Output(ports::IN_PORT) => "IN_PORT".into(),
        Action::Output(ports::CONTROLLER) => "CONTROLLER:65535".into(),
        Action::Output(p) => format!("output:{p}"),
        Action::Group(g) => format!("group:{g}"),
        Action::SetField { field, value } => format!(
            "set_field:{}->{}",
            value_text(*field, *value),
            field_name(*field)
        ),
        Action::PushVlan(t) => format!("push_vlan:0x{t:04x}"),
        Action::PopVlan => "pop_vlan".into(),
        Action::NxController { id } => format!("controller(id={id})"),
        Action::Move { src, dst } => format!("move:{}->{}", range_text(*src), range_text(*dst)),
    }
}

fn actions_list(actions: &[Action]) -> String {
    actions
        .iter()
        .map(action_text)
        .collect::<Vec<_>>()
        .join(",")
}

/// The `actions=` value of a flow's instructions.
pub fn instructions_text(ins: &Instructions) -> String {
    let mut parts: Vec<String> = Vec::new();
    if !ins.apply.is_empty() {
        parts.push(actions_list(&ins.apply));
    }
    if !ins.write.is_empty() {
        parts.push(format!("write_actions({})", actions_list(&ins.write)));
    }
    if let Some(t) = ins.goto_table {
        parts.push(format!("goto_table:{t}"));
    }
    if parts.is_empty() {
        "drop".into()
    } else {
        parts.join(",")
    }
}

/// One `add-flows` line.
pub fn flow_line(f: &Flow) -> String {
    let m = match_text(&f.matches);
    let sep = if m.is_empty() { "" } else { "," };
    format!(
        "table={},priority={},cookie=0x{:x}{sep}{m},actions={}",
        f.table,
        f.priority,
        f.cookie,
        instructions_text(&f.instructions)
    )
}

fn bucket_text(b: &Bucket, select: bool) -> String {
    let mut s = String::from("bucket=");
    if select {
        let _ = write!(s, "weight:{},", b.weight);
    }
    if let Some(w) = b.watch_port {
        let _ = write!(s, "watch_port:{},", port_name(w));
    }
    let _ = write!(s, "actions={}", actions_list(&b.actions));
    s
}

/// The buckets `g` is installed with: a decision point in the slotted layout becomes its catalog
/// (weight 0) and its 256 slots (weight 1), by [`crate::planner::slotted`] as the installed
/// GROUP_MOD is.
fn installed_buckets(g: &Group, layout: SelectLayout) -> Result<Cow<'_, [Bucket]>, String> {
    let Some(slotted) = crate::planner::slotted(g, layout)? else {
        return Ok(Cow::Borrowed(&g.buckets));
    };
    let catalog = g.buckets.len().saturating_sub(1);
    let with_weight = |b: &Bucket, weight: u16| Bucket {
        weight,
        ..b.clone()
    };
    let catalog_buckets = g.buckets.iter().take(catalog).map(|b| with_weight(b, 0));
    let slots = slotted
        .slot_choices()
        .iter()
        .filter_map(|&i| g.buckets.get(i).map(|b| with_weight(b, 1)));
    Ok(Cow::Owned(catalog_buckets.chain(slots).collect()))
}

/// One `add-groups` line, a decision point in `layout`; an error where the group cannot take
/// the layout (the service would refuse to install it too).
pub fn group_line(g: &Group, layout: SelectLayout) -> Result<String, String> {
    let kind = match g.kind {
        GroupType::All => "all",
        GroupType::Select => "select",
        GroupType::Indirect => "indirect",
        GroupType::FastFailover => "ff",
    };
    let select = g.kind == GroupType::Select;
    let buckets: Vec<String> = installed_buckets(g, layout)?
        .iter()
        .map(|b| bucket_text(b, select))
        .collect();
    Ok(format!(
        "group_id={},type={kind},{}",
        g.id,
        buckets.join(",")
    ))
}

/// The switch's `add-groups` file, decision points in `layout`.
pub fn groups_text(sp: &SwitchPlan, layout: SelectLayout) -> Result<String, String> {
    sp.groups
        .iter()
        .map(|g| group_line(g, layout).map(|l| l + "\n"))
        .collect()
}

/// The switch's `add-flows` file.
pub fn flows_text(sp: &SwitchPlan) -> String {
    sp.flows.iter().map(|f| flow_line(f) + "\n").collect()
}

/// Both sections with comments, for people (each section on its own is a loadable file).
pub fn switch_text(sp: &SwitchPlan, layout: SelectLayout) -> Result<String, String> {
    Ok(format!(
        "# switch {} dpid 0x{:016x}\n# groups (ovs-ofctl -O OpenFlow13 add-groups BRIDGE FILE)\n{}# flows (ovs-ofctl -O OpenFlow13 add-flows BRIDGE FILE)\n{}",
        sp.name,
        sp.dpid,
        groups_text(sp, layout)?,
        flows_text(sp)
    ))
}

/// Canonical form of a flow line from this writer or from `ovs-ofctl dump-flows` (with or
/// without `--no-stats`): `table=…,priority=…,cookie=…,` sorted match fields, `actions=…`.
pub fn normalize_flow_line(line: &str) -> Option<String> {
    let line = line.trim();
    let (head, actions) = line.split_once("actions=")?;
    let mut table = "0".to_owned();
    let mut priority = "32768".to_owned();
    let mut cookie = "0x0".to_owned();
    let mut fields: Vec<String> = Vec::new();
    for tok in head
        .split([',', ' '])
        .map(str::trim)
        .filter(|t| !t.is_empty())
    {
        let (k, v) = tok.split_once('=').unwrap_or((tok, ""));
        match k {
            "table" => table = v.to_owned(),
            "priority" => priority = v.to_owned(),
            "cookie" => {
                cookie = format!(
                    "0x{:x}",
                    u64::from_str_radix(v.trim_start_matches("0x"), 16).ok()?
                )
            }
            "duration" | "n_packets" | "n_bytes" | "idle_age" | "hard_age" | "reset_counts" => {}
            "dl_type" if v == "0x0806" => fields.push("arp".into()),
            "dl_type" if v == "0x0800" => fields.push("ip".into()),
            _ => fields.push(tok.to_owned()),
        }
    }
    fields.sort();
    let sep = if fields.is_empty() { "" } else { "," };
    Some(format!(
        "table={table},priority={priority},cookie={cookie}{sep}{},actions={}",
        fields.join(","),
        actions.trim()
    ))
}

/// Canonical form of a group line from this writer or from `ovs-ofctl dump-groups`: bucket ids
/// dropped, the default weight 1 of select buckets made explicit.
pub fn normalize_group_line(line: &str) -> Option<String> {
    let line = line.trim();
    if !line.starts_with("group_id=") {
        return None;
    }
    let mut parts = line.split(",bucket=");
    let head = parts.next()?.to_owned();
    let select = head.contains("type=select");
    let mut out = head;
    for b in parts {
        let mut weight: Option<&str> = None;
        let mut rest: Vec<&str> = Vec::new();
        let (props, actions) = b.split_once("actions=").unwrap_or((b, ""));
        for p in props.split(',').filter(|p| !p.is_empty()) {
            if let Some(w) = p.strip_prefix("weight:") {
                weight = Some(w);
            } else if !p.starts_with("bucket_id:") {
                rest.push(p);
            }
        }
        out.push_str(",bucket=");
        if select {
            let _ = write!(out, "weight:{},", weight.unwrap_or("1"));
        }
        for r in rest {
            let _ = write!(out, "{r},");
        }
        let _ = write!(out, "actions={actions}");
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::ir::Masked;
    use crate::plan::{arp_responder_actions, ports};

    #[test]
    fn text_and_group_mod_share_the_slotted_layout() {
        let bucket = |weight, port| Bucket {
            weight,
            watch_port: Some(port),
            actions: vec![Action::Output(port)],
        };
        let g = Group {
            id: 1003,
            kind: GroupType::Select,
            buckets: vec![bucket(200, 3), bucket(55, 4), bucket(1, 3)],
        };
        let line = group_line(&g, SelectLayout::Slots).unwrap();
        let m = crate::planner::group_mod(&g, SelectLayout::Slots).unwrap();
        // Catalog (2, weight 0) then 256 slots, as the GROUP_MOD carries them.
        assert_eq!(m.buckets.len(), 258);
        assert_eq!(line.matches("bucket=").count(), m.buckets.len());
        let ports: Vec<&str> = line
            .split("bucket=")
            .skip(1)
            .map(|b| b.rsplit("output:").next().unwrap().trim_end_matches(','))
            .collect();
        assert_eq!(ports.iter().filter(|p| **p == "4").count(), 1 + 55);
        // A group the layout cannot take is refused by both, with the same error.
        let bad = Group {
            buckets: vec![bucket(200, 3), bucket(55, 4), bucket(1, 4)],
            ..g
        };
        let e = group_line(&bad, SelectLayout::Slots).unwrap_err();
        assert_eq!(
            crate::planner::group_mod(&bad, SelectLayout::Slots).unwrap_err(),
            e
        );
        assert!(e.contains("padding"), "{e}");
        assert!(group_line(&bad, SelectLayout::Weights).is_ok());
    }

    #[test]
    fn exact_text() {
        let f = Flow {
            table: 0,
            priority: 300,
            cookie: 0xfab,
            matches: Match {
                in_port: Some(1),
                eth_type: Some(ethertype::ARP),
                arp_op: Some(1),
                arp_tpa: Some(Masked {
                    value: Ipv4Addr::new(10, 0, 0, 0),
                    mask: Ipv4Addr::new(255, 0, 0, 0),
                }),
                ..Default::default()
            },
            instructions: Instructions::apply(arp_responder_actions()),
        };
        assert_eq!(
            flow_line(&f),
            "table=0,priority=300,cookie=0xfab,arp,in_port=1,arp_tpa=10.0.0.0/8,arp_op=1,actions=\
             move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[],set_field:02:00:00:00:00:00->eth_src,\
             move:NXM_OF_ARP_TPA[0..23]->NXM_OF_ETH_SRC[0..23],set_field:2->arp_op,\
             move:NXM_NX_ARP_SHA[]->NXM_NX_ARP_THA[],move:NXM_OF_ETH_SRC[]->NXM_NX_ARP_SHA[],\
             move:NXM_OF_ARP_TPA[]->NXM_NX_REG0[],move:NXM_OF_ARP_SPA[]->NXM_OF_ARP_TPA[],\
             move:NXM_NX_REG0[]->NXM_OF_ARP_SPA[],IN_PORT"
        );
        let g = Group {
            id: 1003,
            kind: GroupType::Select,
            buckets: vec![
                Bucket {
                    weight: 255,
                    watch_port: Some(3),
                    actions: vec![Action::Output(3)],
                },
                Bucket {
                    weight: 1,
                    watch_port: Some(3),
                    actions: vec![Action::Output(3)],
                },
            ],
        };
        let line = group_line(&g, SelectLayout::Weights).unwrap();
        assert_eq!(line, "group_id=1003,type=select,bucket=weight:255,watch_port:3,actions=output:3,bucket=weight:1,watch_port:3,actions=output:3");
        // What OVS 3.1 prints for it.
        let dump = " group_id=1003,type=select,bucket=bucket_id:0,weight:255,watch_port:3,actions=output:3,bucket=bucket_id:1,watch_port:3,actions=output:3";
        assert_eq!(normalize_group_line(dump), normalize_group_line(&line));
        let lldp = Flow {
            table: 0,
            priority: 400,
            cookie: 0xfab,
            matches: Match {
                eth_type: Some(ethertype::LLDP),
                ..Default::default()
            },
            instructions: Instructions::apply(vec![Action::Output(ports::CONTROLLER)]),
        };
        let dump = " cookie=0xfab, duration=1.2s, table=0, n_packets=0, n_bytes=0, priority=400,dl_type=0x88cc actions=CONTROLLER:65535";
        assert_eq!(
            normalize_flow_line(dump),
            normalize_flow_line(&flow_line(&lldp))
        );
    }
}
