//! Fabric files: an explicit list of switches, port-to-port links and hosts (YAML).
//!
//! ```yaml
//! switches:
//!   - name: leaf1
//!     dpid: 0x10        # integer (YAML hex allowed) or a string "0x10" / "00:00:00:00:00:00:00:10"
//!     group: 0          # optional, default 0: the address plan's GG field
//!     index: 0          # optional: the SS field; default = position among its group's switches
//!     ports: 8          # optional: highest port number; links and hosts beyond it are errors
//! links:
//!   - [leaf1:3, spine1:1]
//! hosts:
//!   - {name: h1, at: "leaf1:1"}   # name optional (default SWITCH-PORT)
//! ```
//!
//! Every error names the offending item: the switch, the link (by position and text) or host.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use super::{FabricBuilder, FabricKind, PortNo, PortRole, SwitchId, SwitchSpec, TopologyError};
use crate::topology::Fabric;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileDoc {
    switches: Vec<FileSwitch>,
    #[serde(default)]
    links: Vec<(String, String)>,
    #[serde(default)]
    hosts: Vec<FileHost>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Dpid {
    Int(u64),
    Text(String),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSwitch {
    name: String,
    dpid: Dpid,
    #[serde(default)]
    group: u16,
    index: Option<u8>,
    ports: Option<PortNo>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileHost {
    name: Option<String>,
    at: String,
}

/// Reads and validates a fabric file.
pub fn load(path: &Path) -> Result<Fabric, TopologyError> {
    let text = std::fs::read_to_string(path).map_err(|source| TopologyError::Io {
        path: path.to_owned(),
        source,
    })?;
    parse(&text)
}

fn parse_dpid(name: &str, d: &Dpid) -> Result<u64, TopologyError> {
    let bad = || TopologyError::Yaml(format!("switch {name:?}: invalid dpid"));
    match d {
        Dpid::Int(v) => Ok(*v),
        Dpid::Text(t) => {
            let t = t.trim();
            if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
                u64::from_str_radix(&hex.replace('_', ""), 16).map_err(|_| bad())
            } else if t.contains(':') {
                let parts: Vec<&str> = t.split(':').collect();
                if parts.len() != 8 || parts.iter().any(|p| p.is_empty() || p.len() > 2) {
                    return Err(bad());
                }
                parts.iter().try_fold(0u64, |acc, p| {
                    u8::from_str_radix(p, 16)
                        .map(|b| (acc << 8) | u64::from(b))
                        .map_err(|_| bad())
                })
            } else {
                t.parse().map_err(|_| bad())
            }
        }
    }
}

fn endpoint(
    b: &FabricBuilder,
    context: &str,
    text: &str,
) -> Result<(SwitchId, PortNo), TopologyError> {
    let malformed = || TopologyError::MalformedEndpoint {
        context: context.to_owned(),
        text: text.to_owned(),
    };
    let (name, port) = text.rsplit_once(':').ok_or_else(malformed)?;
    let port: PortNo = port.trim().parse().map_err(|_| malformed())?;
    let sw = b
        .switch_by_name(name.trim())
        .ok_or_else(|| TopologyError::UnknownSwitch {
            context: context.to_owned(),
            name: name.trim().to_owned(),
        })?;
    Ok((sw, port))
}

/// Parses and validates a fabric description from YAML text.
pub fn parse(text: &str) -> Result<Fabric, TopologyError> {
    let doc: FileDoc =
        serde_yaml::from_str(text).map_err(|e| TopologyError::Yaml(e.to_string()))?;
    let mut b = FabricBuilder::new(FabricKind::File);
    let mut next_index: BTreeMap<u16, u16> = BTreeMap::new();
    let mut used_index: BTreeMap<(u16, u8), String> = BTreeMap::new();
    for s in &doc.switches {
        let dpid = parse_dpid(&s.name, &s.dpid)?;
        let slot = next_index.entry(s.group).or_default();
        let index = match s.index {
            Some(i) => i,
            None => u8::try_from(*slot).map_err(|_| TopologyError::GroupTooLarge {
                group: s.group,
                count: usize::from(*slot) + 1,
            })?,
        };
        *slot += 1;
        if let Some(other) = used_index.insert((s.group, index), s.name.clone()) {
            return Err(TopologyError::DuplicateIndex {
                switch: s.name.clone(),
                group: s.group,
                index,
                other,
            });
        }
        b.add_switch(SwitchSpec {
            dpid,
            name: s.name.clone(),
            group: Some(s.group),
            index,
            level: 0,
            max_port: s.ports,
        })?;
    }
    for (i, (x, y)) in doc.links.iter().enumerate() {
        let context = format!("link {} [{x}, {y}]", i + 1);
        let (sa, pa) = endpoint(&b, &context, x)?;
        let (sb, pb) = endpoint(&b, &context, y)?;
        b.connect(&context, sa, pa, PortRole::Fabric, sb, pb, PortRole::Fabric)?;
    }
    for (i, h) in doc.hosts.iter().enumerate() {
        let context = format!("host {} ({})", i + 1, h.name.as_deref().unwrap_or(&h.at));
        let (sw, port) = endpoint(&b, &context, &h.at)?;
        let name = h.name.clone().unwrap_or_else(|| h.at.replace(':', "-"));
        b.add_host(name, sw, port)?;
    }
    b.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const GOOD: &str = r#"
switches:
  - {name: a, dpid: 0x1, ports: 4}
  - {name: b, dpid: "0x2"}
  - {name: c, dpid: "00:00:00:00:00:00:00:03", group: 1}
links:
  - [a:3, b:3]
  - [b:4, c:4]
  - [a:4, c:3]
hosts:
  - {name: h1, at: "a:1"}
  - {at: "c:1"}
"#;

    #[test]
    fn good_file() {
        let f = parse(GOOD).unwrap();
        assert_eq!(f.switches().len(), 3);
        assert_eq!(f.hosts().len(), 2);
        assert_eq!(f.hosts()[1].name, "c-1");
        assert_eq!(f.hosts()[1].location.mac().to_string(), "02:00:00:01:00:01");
        assert_eq!(f.switches()[2].dpid, 3);
    }

    fn err(text: &str) -> String {
        parse(text).map(|_| ()).unwrap_err().to_string()
    }

    #[test]
    fn errors_name_the_item() {
        let e = err(&GOOD.replace("[a:3, b:3]", "[a:5, b:3]"));
        assert!(e.contains("no port 5") && e.contains("\"a\""), "{e}");
        let e = err(&GOOD.replace("dpid: \"0x2\"", "dpid: 1"));
        assert!(
            e.contains("dpid") && e.contains("\"b\"") && e.contains("\"a\""),
            "{e}"
        );
        let e = err(&GOOD.replace("[a:3, b:3]", "[a:3, a:2]"));
        assert!(e.contains("self link") && e.contains("\"a\""), "{e}");
        let e = err(&GOOD.replace("at: \"a:1\"", "at: \"a:3\""));
        assert!(
            e.contains("port 3") && e.contains("already used") && e.contains("link 1"),
            "{e}"
        );
        let e = err(&GOOD.replace("  - [b:4, c:4]\n  - [a:4, c:3]\n", ""));
        assert!(e.contains("disconnected") && e.contains("\"c\""), "{e}");
        let e = err(&GOOD.replace("[a:3, b:3]", "[a:3, z:3]"));
        assert!(
            e.contains("unknown switch \"z\"") && e.contains("link 1"),
            "{e}"
        );
        let e = err(&GOOD.replace("[a:3, b:3]", "[a3, b:3]"));
        assert!(e.contains("malformed endpoint"), "{e}");
        let e = err(&GOOD.replace("at: \"c:1\"", "at: \"c:300\""));
        assert!(e.contains("300") && e.contains("1..=255"), "{e}");
        let e = err(&GOOD.replace("name: b,", "name: a,"));
        assert!(e.contains("\"a\" used twice"), "{e}");
        let e = err("switches: []");
        assert!(e.contains("no switches"), "{e}");
        let e = err("switches: [{name: a, dpid: 1, colour: red}]");
        assert!(e.contains("colour"), "{e}");
    }

    fn yamlish() -> impl Strategy<Value = String> {
        let name = prop::sample::select(vec!["a", "b", "c", "zz", ""]);
        let port = prop::sample::select(vec![
            "0",
            "1",
            "2",
            "3",
            "255",
            "256",
            "4294967295",
            "x",
            "-1",
        ]);
        let ep = (name.clone(), port.clone()).prop_map(|(n, p)| format!("{n}:{p}"));
        let sw = (
            name,
            prop::sample::select(vec!["0", "1", "2", "0x1", "\"zz\"", "-5"]),
            prop::option::of(0u32..300),
            prop::option::of(0u32..6),
        )
            .prop_map(|(n, d, g, ports)| {
                let mut s = format!("  - {{name: {n}, dpid: {d}");
                if let Some(g) = g {
                    s += &format!(", group: {g}");
                }
                if let Some(p) = ports {
                    s += &format!(", ports: {p}");
                }
                s + "}\n"
            });
        let link = (ep.clone(), ep.clone()).prop_map(|(x, y)| format!("  - [{x}, {y}]\n"));
        let host = ep.prop_map(|e| format!("  - {{at: \"{e}\"}}\n"));
        (
            prop::collection::vec(sw, 0..5),
            prop::collection::vec(link, 0..6),
            prop::collection::vec(host, 0..4),
        )
            .prop_map(|(s, l, h)| {
                format!(
                    "switches:\n{}links:\n{}hosts:\n{}",
                    s.concat(),
                    l.concat(),
                    h.concat()
                )
            })
    }

    proptest! {
        #[test]
        fn never_panics_on_yamlish(text in yamlish()) {
            let _ = parse(&text);
        }
        #[test]
        fn never_panics_on_bytes(text in ".{0,200}") {
            let _ = parse(&text);
        }
    }
}
