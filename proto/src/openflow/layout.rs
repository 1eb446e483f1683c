//! Declared layouts: [`ofp_struct!`] states an OpenFlow structure once, the way the
//! specification does — its fields in wire order with their types, the padding between them
//! and, where the structure carries it, its own length — and generates the Rust struct and its
//! [`Wire`] codec from that one statement.
//!
//! A field's type reads and writes itself: fixed-size types through [`FixedField`], the others
//! (a match, or a list or bytes that run to the end of the structure) through [`Field`].
//! [`wire_enum!`] does the same for the code enums such structures carry: each value is stated
//! once, with its name where it prints.

use bytes::{BufMut, BytesMut};

use crate::openflow::header::end;
use crate::wire::{self, PResult, Wire};
use crate::MacAddr;

/// A value of constant size in an [`ofp_struct!`] layout.
pub(crate) trait FixedField: Sized {
    /// Bytes on the wire.
    const SIZE: usize;
    /// Reads the value from the front of `input`; `what` names it in errors.
    fn read<'a>(input: &'a [u8], what: &'static str) -> PResult<'a, Self>;
    /// Writes exactly [`Self::SIZE`] bytes.
    fn write<B: BufMut>(&self, out: &mut B);
}

/// Any part of an [`ofp_struct!`] layout: a [`FixedField`], or one of variable length.
pub(crate) trait Field: Sized {
    fn read<'a>(input: &'a [u8], what: &'static str) -> PResult<'a, Self>;
    fn write(&self, out: &mut BytesMut);
}

impl<T: FixedField> Field for T {
    fn read<'a>(input: &'a [u8], what: &'static str) -> PResult<'a, Self> {
        <T as FixedField>::read(input, what)
    }
    fn write(&self, out: &mut BytesMut) {
        FixedField::write(self, out);
    }
}

macro_rules! int_fields {
    ($($t:ty => $read:path;)*) => {$(
        impl FixedField for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn read<'a>(input: &'a [u8], what: &'static str) -> PResult<'a, Self> {
                $read(input, what)
            }
            fn write<B: BufMut>(&self, out: &mut B) {
                out.put_slice(&self.to_be_bytes());
            }
        }
    )*};
}
int_fields! {
    u8 => wire::u8_;
    u16 => wire::u16_;
    u32 => wire::u32_;
    u64 => wire::u64_;
}

/// An array of fields, element after element (each named `what`).
impl<T: FixedField + Copy + Default, const N: usize> FixedField for [T; N] {
    const SIZE: usize = N * T::SIZE;
    fn read<'a>(mut input: &'a [u8], what: &'static str) -> PResult<'a, Self> {
        let mut a = [T::default(); N];
        for x in &mut a {
            let (rest, v) = <T as FixedField>::read(input, what)?;
            *x = v;
            input = rest;
        }
        Ok((input, a))
    }
    fn write<B: BufMut>(&self, out: &mut B) {
        for x in self {
            FixedField::write(x, out);
        }
    }
}

impl FixedField for MacAddr {
    const SIZE: usize = 6;
    fn read<'a>(input: &'a [u8], what: &'static str) -> PResult<'a, Self> {
        let (i, a) = wire::array::<6>(input, what)?;
        Ok((i, MacAddr(a)))
    }
    fn write<B: BufMut>(&self, out: &mut B) {
        out.put_slice(&self.0);
    }
}

/// A list that fills the rest of the structure.
impl<T: Wire> Field for Vec<T> {
    fn read<'a>(input: &'a [u8], _what: &'static str) -> PResult<'a, Self> {
        wire::many_exact(input)
    }
    fn write(&self, out: &mut BytesMut) {
        for x in self {
            x.encode(out);
        }
    }
}

/// Bytes to the end of the structure (packet data, experimenter payloads).
impl Field for Vec<u8> {
    fn read<'a>(input: &'a [u8], _what: &'static str) -> PResult<'a, Self> {
        Ok((end(input), input.to_vec()))
    }
    fn write(&self, out: &mut BytesMut) {
        out.put_slice(self);
    }
}

/// Declares a code enum: the named values of an unsigned integer field and a last variant that
/// keeps any other value, so that every value decodes and re-encodes. Generates `from_uN` /
/// `to_uN` and the [`FixedField`] impl; when every value has a name (`Add = 0 => "ADD"`), also
/// `Display`, which prints any other value as the name given to `_` followed by the number.
///
/// ```text
/// wire_enum! {
///     /// `ofp_group_type`.
///     #[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
///     pub enum GroupType: u8 {
///         #[default]
///         All = 0 => "all",
///         …
///         _ => Unknown => "type",
///     }
/// }
/// ```
macro_rules! wire_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident: $int:ident {
            $($(#[$vmeta:meta])* $var:ident = $val:literal => $show:literal,)*
            _ => $other:ident => $prefix:literal $(,)?
        }
    ) => {
        $crate::openflow::layout::wire_enum! {
            $(#[$meta])*
            pub enum $name: $int {
                $($(#[$vmeta])* $var = $val,)*
                _ => $other,
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                match self {
                    $(Self::$var => f.write_str($show),)*
                    Self::$other(x) => write!(f, "{}{x}", $prefix),
                }
            }
        }
    };
    (
        $(#[$meta:meta])*
        pub enum $name:ident: $int:ident {
            $($(#[$vmeta:meta])* $var:ident = $val:literal,)*
            _ => $other:ident $(,)?
        }
    ) => {
        $(#[$meta])*
        pub enum $name {
            $($(#[$vmeta])* $var,)*
            $other($int),
        }

        $crate::openflow::layout::wire_enum!(@conv $int $name $other $($var = $val)*);
    };

    (@conv u8 $($rest:tt)*) => {
        $crate::openflow::layout::wire_enum!(@impl u8 from_u8 to_u8 $($rest)*);
    };
    (@conv u16 $($rest:tt)*) => {
        $crate::openflow::layout::wire_enum!(@impl u16 from_u16 to_u16 $($rest)*);
    };
    (@conv u32 $($rest:tt)*) => {
        $crate::openflow::layout::wire_enum!(@impl u32 from_u32 to_u32 $($rest)*);
    };
    (@impl $int:ident $from:ident $to:ident $name:ident $other:ident
        $($var:ident = $val:literal)*
    ) => {
        impl $name {
            pub fn $from(v: $int) -> Self {
                match v {
                    $($val => Self::$var,)*
                    x => Self::$other(x),
                }
            }

            pub fn $to(self) -> $int {
                match self {
                    $(Self::$var => $val,)*
                    Self::$other(x) => x,
                }
            }
        }

        impl $crate::openflow::layout::FixedField for $name {
            const SIZE: usize = <$int as $crate::openflow::layout::FixedField>::SIZE;

            fn read<'a>(input: &'a [u8], what: &'static str) -> $crate::wire::PResult<'a, Self> {
                let (i, v) = <$int as $crate::openflow::layout::FixedField>::read(input, what)?;
                Ok((i, Self::$from(v)))
            }

            fn write<B: ::bytes::BufMut>(&self, out: &mut B) {
                $crate::openflow::layout::FixedField::write(&self.$to(), out);
            }
        }
    };
}
pub(crate) use wire_enum;

/// Declares an `ofp_*_mod_command`: ADD, MODIFY and DELETE (0, 1, 2) in a u16, printed `ADD`,
/// `MOD`, `DEL`. GROUP_MOD and METER_MOD each have one, with these same values.
macro_rules! mod_command {
    ($(#[$meta:meta])* $name:ident) => {
        $crate::openflow::layout::wire_enum! {
            $(#[$meta])*
            #[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ::serde::Serialize)]
            pub enum $name: u16 {
                #[default]
                Add = 0 => "ADD",
                Modify = 1 => "MOD",
                Delete = 2 => "DEL",
                _ => Other => "CMD",
            }
        }
    };
}
pub(crate) use mod_command;

/// For a structure that began at `start` and whose u16 length (of the whole structure) is at the
/// front of `at`: checks the length covers at least `min` bytes and that they are there. Returns
/// the input after the structure and, as the value, the structure's bytes after its length.
pub(crate) fn framed<'a>(
    start: &'a [u8],
    at: &'a [u8],
    min: usize,
    what: &'static str,
) -> PResult<'a, &'a [u8]> {
    let (_, len) = wire::u16_(at, what)?;
    let len = usize::from(len);
    if len < min {
        return wire::bad_length(start, what, len, "shorter than its fixed part");
    }
    let (after, whole) = wire::take(start, len, what)?;
    let body_at = start.len() - at.len() + 2;
    Ok((after, whole.get(body_at..).unwrap_or_default()))
}

/// Declares an OpenFlow structure and its [`Wire`] codec from its layout.
///
/// ```text
/// ofp_struct! {
///     /// `struct ofp_group_stats`.
///     #[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
///     pub struct GroupStats("ofp_group_stats") {
///         length: Length >= 40,
///         pad: [u8; 2],
///         pub group_id: u32,
///         …
///         pub bucket_stats: Vec<BucketCounter>,
///     }
/// }
/// ```
///
/// The entries, in wire order:
/// - `pub name: Type,` a field of the struct (doc comments and attributes allowed). Its type
///   implements [`FixedField`] or [`Field`]; a `Vec` fills the rest of the structure.
///   `pub name: Type as "wire_name",` names it differently in errors.
/// - `name: [u8; n],` padding: zeros on encode, skipped on decode, not kept.
/// - `name: Length >= min,` the u16 length of the whole structure, not kept: computed on encode;
///   on decode the structure must announce at least `min` bytes (its fixed part) and ends there.
///
/// The string names the specification's structure: a truncated field `f` is reported as
/// `"ofp_x.f"` (`("flow_mod" separator " ")` gives the older `"flow_mod f"`).
///
/// `("ofp_x", n bytes)` declares a structure of constant size `n` (checked at compile time): it is
/// also a [`FixedField`], so it can be a field of another structure, and it is encoded on the
/// stack and appended at once (one `BytesMut` write instead of one per field, which made a
/// 48-port PORT_STATS reply encode several times slower than it decodes).
macro_rules! ofp_struct {
    // ---- the header: the structure's name, maybe a separator, maybe a constant size ----
    (
        $(#[$meta:meta])*
        pub struct $name:ident($spec:literal $(, $size:literal bytes)?) { $($body:tt)* }
    ) => {
        $crate::openflow::layout::ofp_struct!(@parse
            [$(#[$meta])*] $name $spec "." [$($size)?] [] [] [] $($body)*);
    };
    (
        $(#[$meta:meta])*
        pub struct $name:ident($spec:literal separator $sep:literal $(, $size:literal bytes)?) {
            $($body:tt)*
        }
    ) => {
        $crate::openflow::layout::ofp_struct!(@parse
            [$(#[$meta])*] $name $spec $sep [$($size)?] [] [] [] $($body)*);
    };

    // ---- entries, one at a time: [size] [framed] [struct fields] [wire steps] ----
    (@parse $meta:tt $name:ident $spec:literal $sep:literal $size:tt $framed:tt [$($fields:tt)*]
        [$($steps:tt)*] $pad:ident: [u8; $n:literal], $($rest:tt)*
    ) => {
        $crate::openflow::layout::ofp_struct!(@parse $meta $name $spec $sep $size $framed
            [$($fields)*] [$($steps)* (pad $pad $n)] $($rest)*);
    };
    (@parse $meta:tt $name:ident $spec:literal $sep:literal $size:tt [] [$($fields:tt)*]
        [$($steps:tt)*] $len:ident: Length >= $min:literal, $($rest:tt)*
    ) => {
        $crate::openflow::layout::ofp_struct!(@parse $meta $name $spec $sep $size [framed]
            [$($fields)*] [$($steps)* (length $len $min)] $($rest)*);
    };
    (@parse $meta:tt $name:ident $spec:literal $sep:literal $size:tt $framed:tt [$($fields:tt)*]
        [$($steps:tt)*] $(#[$fmeta:meta])* pub $field:ident: $ty:ty as $wire:literal,
        $($rest:tt)*
    ) => {
        $crate::openflow::layout::ofp_struct!(@parse $meta $name $spec $sep $size $framed
            [$($fields)* ([$(#[$fmeta])*] $field $ty)] [$($steps)* (field $field $ty [$wire])]
            $($rest)*);
    };
    (@parse $meta:tt $name:ident $spec:literal $sep:literal $size:tt $framed:tt [$($fields:tt)*]
        [$($steps:tt)*] $(#[$fmeta:meta])* pub $field:ident: $ty:ty, $($rest:tt)*
    ) => {
        $crate::openflow::layout::ofp_struct!(@parse $meta $name $spec $sep $size $framed
            [$($fields)* ([$(#[$fmeta])*] $field $ty)]
            [$($steps)* (field $field $ty [])] $($rest)*);
    };

    // ---- all read: the struct and its codec ----
    (@parse [$($meta:tt)*] $name:ident $spec:literal $sep:literal [] $framed:tt
        [$(([$($fmeta:tt)*] $field:ident $ty:ty))*] [$($step:tt)*]
    ) => {
        $($meta)*
        pub struct $name {
            $($($fmeta)* pub $field: $ty,)*
        }

        impl $crate::wire::Wire for $name {
            fn decode(input: &[u8]) -> $crate::wire::PResult<'_, Self> {
                let i = input;
                $($crate::openflow::layout::ofp_struct!(@read [input i rest $spec $sep] $step);)*
                $crate::openflow::layout::ofp_struct!(@done $framed i rest $name $($field)*)
            }

            fn encode(&self, out: &mut ::bytes::BytesMut) {
                let $name { $($field,)* } = self;
                $crate::openflow::layout::ofp_struct!(@start $framed out start);
                $($crate::openflow::layout::ofp_struct!(@write [out len_at] $step);)*
                $crate::openflow::layout::ofp_struct!(@patch $framed out start len_at);
            }
        }
    };
    (@parse [$($meta:tt)*] $name:ident $spec:literal $sep:literal [$size:literal] []
        [$(([$($fmeta:tt)*] $field:ident $ty:ty))*] [$($step:tt)*]
    ) => {
        $($meta)*
        pub struct $name {
            $($($fmeta)* pub $field: $ty,)*
        }

        impl $crate::openflow::layout::FixedField for $name {
            const SIZE: usize = 0 $(+ $crate::openflow::layout::ofp_struct!(@size $step))*;

            fn read<'a>(input: &'a [u8], _what: &'static str) -> $crate::wire::PResult<'a, Self> {
                let i = input;
                $($crate::openflow::layout::ofp_struct!(@read [input i rest $spec $sep] $step);)*
                Ok((i, $name { $($field,)* }))
            }

            fn write<B: ::bytes::BufMut>(&self, out: &mut B) {
                let $name { $($field,)* } = self;
                $($crate::openflow::layout::ofp_struct!(@put out $step);)*
            }
        }

        const _: () = assert!(
            <$name as $crate::openflow::layout::FixedField>::SIZE == $size,
            concat!("the fields of ", $spec, " do not add up to ", $size, " bytes"),
        );

        impl $crate::wire::Wire for $name {
            fn decode(input: &[u8]) -> $crate::wire::PResult<'_, Self> {
                <Self as $crate::openflow::layout::FixedField>::read(input, $spec)
            }

            fn encode(&self, out: &mut ::bytes::BytesMut) {
                let mut buf = [0u8; $size];
                $crate::openflow::layout::FixedField::write(self, &mut buf.as_mut_slice());
                ::bytes::BufMut::put_slice(out, &buf);
            }
        }
    };

    // ---- one step of decode / encode ----
    // `input` is where the structure starts, `i` what is left to read, `rest` the input after a
    // structure with a length.
    (@read [$input:ident $i:ident $rest:ident $spec:literal $sep:literal]
        (pad $pad:ident $n:literal)
    ) => {
        let ($i, ()) = $crate::wire::skip($i, $n, concat!($spec, $sep, stringify!($pad)))?;
    };
    (@read [$input:ident $i:ident $rest:ident $spec:literal $sep:literal]
        (length $len:ident $min:literal)
    ) => {
        let ($rest, $i) = $crate::openflow::layout::framed($input, $i, $min, $spec)?;
    };
    (@read [$input:ident $i:ident $rest:ident $spec:literal $sep:literal]
        (field $field:ident $ty:ty [$($wire:literal)?])
    ) => {
        let what = concat!(
            $spec,
            $sep,
            $crate::openflow::layout::ofp_struct!(@name $field $($wire)?)
        );
        let ($i, $field) = <$ty as $crate::openflow::layout::Field>::read($i, what)?;
    };
    (@write [$out:ident $len_at:ident] (pad $pad:ident $n:literal)) => {
        $crate::wire::put_zeros($out, $n);
    };
    (@write [$out:ident $len_at:ident] (length $len:ident $min:literal)) => {
        let $len_at = $out.len();
        ::bytes::BufMut::put_u16($out, 0);
    };
    (@write [$out:ident $len_at:ident] (field $field:ident $ty:ty [$($wire:literal)?])) => {
        <$ty as $crate::openflow::layout::Field>::write($field, $out);
    };
    (@put $out:ident (pad $pad:ident $n:literal)) => {
        ::bytes::BufMut::put_bytes($out, 0, $n);
    };
    (@put $out:ident (field $field:ident $ty:ty [$($wire:literal)?])) => {
        <$ty as $crate::openflow::layout::FixedField>::write($field, $out);
    };
    (@size (pad $pad:ident $n:literal)) => { $n };
    (@size (field $field:ident $ty:ty [$($wire:literal)?])) => {
        <$ty as $crate::openflow::layout::FixedField>::SIZE
    };

    (@name $field:ident) => { stringify!($field) };
    (@name $field:ident $wire:literal) => { $wire };

    // ---- the end of decode / encode: a structure with a length ends where it says ----
    (@done [] $i:ident $rest:ident $name:ident $($field:ident)*) => {
        Ok(($i, $name { $($field,)* }))
    };
    (@done [framed] $i:ident $rest:ident $name:ident $($field:ident)*) => {{
        let _ = $i; // a list ran to the end the length set
        Ok(($rest, $name { $($field,)* }))
    }};
    (@start [] $out:ident $start:ident) => {};
    (@start [framed] $out:ident $start:ident) => {
        let $start = $out.len();
    };
    (@patch [] $out:ident $start:ident $len_at:ident) => {};
    (@patch [framed] $out:ident $start:ident $len_at:ident) => {
        let len = $out.len() - $start;
        $crate::wire::patch_u16($out, $len_at, $crate::wire::len_u16(len));
    };
}
pub(crate) use ofp_struct;

#[cfg(test)]
mod tests {
    use crate::error::ErrorKind;
    use crate::wire::Wire;

    ofp_struct! {
        /// Every kind of entry, at constant size.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
        pub struct Demo("ofp_demo", 8 bytes) {
            pub a: u8,
            pad: [u8; 1],
            pub b: u16 as "bee",
            pub c: u32,
        }
    }

    ofp_struct! {
        /// A structure with its own length, after a field.
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct Framed("ofp_framed") {
            pub id: u32,
            len: Length >= 8,
            pad: [u8; 2],
            pub demos: Vec<Demo>,
        }
    }

    ofp_struct! {
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct Old("old" separator " ") {
            pub a: u16,
        }
    }

    fn truncated_at(b: &[u8]) -> &'static str {
        match Demo::from_bytes(b).map_err(|e| e.kind) {
            Err(ErrorKind::Truncated { what, .. }) => what,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn fields_pads_and_names() {
        let d = Demo {
            a: 1,
            b: 0x0203,
            c: 0x0405_0607,
        };
        assert_eq!(&d.to_bytes()[..], &[1, 0, 2, 3, 4, 5, 6, 7]);
        assert_eq!(Demo::from_bytes(&[1, 9, 2, 3, 4, 5, 6, 7]).unwrap(), d);
        assert_eq!(truncated_at(&[1]), "ofp_demo.pad");
        assert_eq!(truncated_at(&[1, 0, 2]), "ofp_demo.bee");
        assert_eq!(truncated_at(&[1, 0, 2, 3]), "ofp_demo.c");
        let e = Old::from_bytes(&[1]).unwrap_err();
        assert!(matches!(e.kind, ErrorKind::Truncated { what: "old a", .. }));
    }

    #[test]
    fn a_length_is_written_and_bounds_the_structure() {
        let f = Framed {
            id: 7,
            demos: vec![Demo::default(); 2],
        };
        let b = f.to_bytes();
        assert_eq!(&b[..8], &[0, 0, 0, 7, 0, 24, 0, 0]);
        let mut two = b.to_vec();
        two.extend_from_slice(&b);
        let (rest, d) = Framed::decode(&two).unwrap();
        assert_eq!((rest.len(), d), (24, f));
        let e = Framed::from_bytes(&[0, 0, 0, 7, 0, 6, 0, 0]).unwrap_err();
        assert_eq!(e.offset, 0);
        assert!(matches!(
            e.kind,
            ErrorKind::BadLength {
                what: "ofp_framed",
                length: 6,
                ..
            }
        ));
    }
}
