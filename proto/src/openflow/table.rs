//! OFPT_TABLE_MOD and the table-number constants.

use std::fmt;

use serde::Serialize;

use super::layout::ofp_struct;

/// Last usable table number.
pub const OFPTT_MAX: u8 = 0xfe;
/// Wildcard table (all tables).
pub const OFPTT_ALL: u8 = 0xff;

ofp_struct! {
    /// OFPT_TABLE_MOD body: table_id, 3 pad bytes, config (8 bytes).
    #[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
    pub struct TableMod("table_mod" separator " ", 8 bytes) {
        pub table_id: u8,
        pad: [u8; 3],
        /// `ofp_table_config` bits (deprecated in 1.3; kept verbatim).
        pub config: u32,
    }
}

impl TableMod {
    pub fn new(table_id: u8, config: u32) -> Self {
        TableMod { table_id, config }
    }
}

impl fmt::Display for TableMod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.table_id == OFPTT_ALL {
            f.write_str("table_id=all")?;
        } else {
            write!(f, "table_id={}", self.table_id)?;
        }
        write!(f, ", config={:#x}", self.config)
    }
}

#[cfg(test)]
pub(crate) mod arb {
    use super::*;
    use proptest::prelude::*;

    pub fn any_table_mod() -> impl Strategy<Value = TableMod> {
        any::<(u8, u32)>().prop_map(|(table_id, config)| TableMod { table_id, config })
    }
}

#[cfg(test)]
mod tests {
    use super::arb::*;
    use super::*;
    use crate::openflow::oxm::test_util::*;
    use crate::wire::Wire;
    use proptest::prelude::*;

    /// OVS tests/ofp-print.at "OFPT_TABLE_MOD - OF1.3", body after the header.
    #[test]
    fn table_mod_golden_ovs() {
        let b = hex_bytes("02 00 00 00 00 00 00 00");
        let t = TableMod::from_bytes(&b).unwrap();
        assert_eq!(t, TableMod::new(2, 0));
        assert_eq!(&t.to_bytes()[..], &b[..]);
        assert_eq!(t.to_string(), "table_id=2, config=0x0");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn table_mod_roundtrip(v in any_table_mod()) {
            check_roundtrip(&v);
            check_truncations(&v);
        }
        #[test]
        fn table_mod_random(b in proptest::collection::vec(any::<u8>(), 0..16)) {
            let _ = TableMod::decode(&b);
        }
    }
}
