//! What kind of IP address a request is about to reach: the one
//! classifier of the addresses a request must not reach by a name
//! (server-side request forgery). A crate of its own, with no dependency at
//! all, because two requesters use it and neither may depend on the other:
//! the sandbox kernel, for the requests a pack sends to a granted origin
//! (it refuses every class, unless the grant names the address itself),
//! and the trust chain, for a registry's redirects and token services (it
//! refuses the classes where cloud credentials answer, and leaves a
//! registry on loopback or a private network reachable).
//!
//! An IPv6 address that carries an IPv4 one (IPv4-mapped, NAT64, SIIT, the
//! old IPv4-compatible form, 6to4) is classed as the IPv4 address it
//! reaches: `64:ff9b::a9fe:a9fe` is 169.254.169.254. Local-use NAT64
//! (`64:ff9b:1::/48`) may carry it in any of four layouts, which the
//! address does not say: it is classed as cloud metadata, link-local or
//! loopback if any address it could carry is one, and as private otherwise
//! (it never reaches the internet directly).
#![warn(missing_docs)]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A kind of address no request should reach by a name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressClass {
    /// A cloud provider's metadata or host service, which hands out the
    /// machine's credentials: 169.254.169.254 (most clouds),
    /// 100.100.100.200 (Alibaba Cloud), 168.63.129.16 (Azure's
    /// WireServer), 192.0.0.192 (Oracle Cloud Classic), fd00:ec2::254 and
    /// fd00:ec2::23 (AWS over IPv6, and its EKS Pod Identity Agent),
    /// fd20:ce::254 (Google Cloud over IPv6), fd00:c1::a9fe:a9fe (Oracle
    /// Cloud over IPv6), fd00:42::42 (Scaleway over IPv6).
    CloudMetadata,
    /// This machine: 127.0.0.0/8, ::1.
    Loopback,
    /// A private network: 10/8, 172.16/12, 192.168/16, fc00::/7, fec0::/10.
    Private,
    /// The link: 169.254/16, fe80::/10, where metadata services answer too.
    LinkLocal,
    /// Carrier-grade NAT's shared space: 100.64/10.
    SharedNat,
    /// "This network": 0/8, ::. (Linux connects 0.0.0.0 to this machine.)
    Unspecified,
    /// Multicast: 224/4, ff00::/8.
    Multicast,
    /// Reserved: 240/4 and the broadcast address, 192.0.0/24, 192.88.99/24,
    /// 5f00::/16 (SRv6 segment identifiers).
    Reserved,
    /// Benchmarking: 198.18/15, 2001:2::/48.
    Benchmarking,
    /// Documentation: 192.0.2/24, 198.51.100/24, 203.0.113/24,
    /// 2001:db8::/32, 3fff::/20.
    Documentation,
    /// Teredo tunnels: 2001::/32, which reach an IPv4 address indirectly.
    Teredo,
    /// The discard prefix: 100::/64.
    Discard,
}

impl AddressClass {
    /// The class in a few words, as refusals name it (`"cloud metadata"`).
    pub fn name(self) -> &'static str {
        match self {
            AddressClass::CloudMetadata => "cloud metadata",
            AddressClass::Loopback => "loopback",
            AddressClass::Private => "private",
            AddressClass::LinkLocal => "link-local",
            AddressClass::SharedNat => "shared (carrier-grade NAT)",
            AddressClass::Unspecified => "unspecified",
            AddressClass::Multicast => "multicast",
            AddressClass::Reserved => "reserved",
            AddressClass::Benchmarking => "benchmarking",
            AddressClass::Documentation => "documentation",
            AddressClass::Teredo => "tunnel (Teredo)",
            AddressClass::Discard => "discard",
        }
    }
}

/// The class of `address`, or `None` for an address on the internet.
pub fn classify(address: IpAddr) -> Option<AddressClass> {
    match address {
        IpAddr::V4(address) => classify_v4(address),
        IpAddr::V6(address) => classify_v6(address),
    }
}

fn classify_v4(address: Ipv4Addr) -> Option<AddressClass> {
    let [a, b, c, _] = address.octets();
    Some(match () {
        _ if address == Ipv4Addr::new(169, 254, 169, 254)
            || address == Ipv4Addr::new(100, 100, 100, 200)
            || address == Ipv4Addr::new(168, 63, 129, 16)
            || address == Ipv4Addr::new(192, 0, 0, 192) =>
        {
            AddressClass::CloudMetadata
        }
        _ if address.is_loopback() => AddressClass::Loopback,
        _ if address.is_private() => AddressClass::Private,
        _ if address.is_link_local() => AddressClass::LinkLocal,
        _ if a == 100 && (b & 0xc0) == 64 => AddressClass::SharedNat,
        _ if a == 0 => AddressClass::Unspecified,
        _ if address.is_multicast() => AddressClass::Multicast,
        _ if a >= 240 => AddressClass::Reserved,
        _ if a == 192 && b == 0 && c == 0 => AddressClass::Reserved,
        _ if a == 192 && b == 88 && c == 99 => AddressClass::Reserved,
        _ if a == 198 && (b & 0xfe) == 18 => AddressClass::Benchmarking,
        _ if address.is_documentation() => AddressClass::Documentation,
        _ => return None,
    })
}

/// Cloud metadata services' IPv6 addresses (see [`AddressClass::CloudMetadata`]).
const METADATA_V6: [Ipv6Addr; 5] = [
    Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254),
    Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0023),
    Ipv6Addr::new(0xfd20, 0x00ce, 0, 0, 0, 0, 0, 0x0254),
    Ipv6Addr::new(0xfd00, 0x00c1, 0, 0, 0, 0, 0xa9fe, 0xa9fe),
    Ipv6Addr::new(0xfd00, 0x0042, 0, 0, 0, 0, 0, 0x0042),
];

fn classify_v6(address: Ipv6Addr) -> Option<AddressClass> {
    if let Some(v4) = carried_v4(address) {
        return classify_v4(v4);
    }
    let segments = address.segments();
    if segments[..3] == [0x64, 0xff9b, 1] {
        return Some(local_use_nat64(address));
    }
    Some(match () {
        _ if METADATA_V6.contains(&address) => AddressClass::CloudMetadata,
        _ if address.is_loopback() => AddressClass::Loopback,
        _ if address.is_unspecified() => AddressClass::Unspecified,
        _ if address.is_multicast() => AddressClass::Multicast,
        _ if (segments[0] & 0xffc0) == 0xfe80 => AddressClass::LinkLocal,
        _ if (segments[0] & 0xfe00) == 0xfc00 || (segments[0] & 0xffc0) == 0xfec0 => AddressClass::Private,
        _ if segments[0] == 0x2001 && segments[1] == 0 => AddressClass::Teredo,
        _ if segments[0] == 0x2001 && segments[1] == 0x0db8 => AddressClass::Documentation,
        _ if segments[..3] == [0x2001, 0x0002, 0] => AddressClass::Benchmarking,
        _ if segments[0] == 0x0100 && segments[1..4] == [0, 0, 0] => AddressClass::Discard,
        _ if segments[0] == 0x3fff && (segments[1] & 0xf000) == 0 => AddressClass::Documentation,
        _ if segments[0] == 0x5f00 => AddressClass::Reserved,
        _ => return None,
    })
}

/// A local-use NAT64 address (RFC 8215, `64:ff9b:1::/48`): its network
/// chooses a prefix of 48, 56, 64 or 96 bits (RFC 6052), each of which
/// puts the IPv4 address elsewhere. Classed as cloud metadata, link-local
/// or loopback if any of the four addresses it could carry is, and as
/// private otherwise.
fn local_use_nat64(address: Ipv6Addr) -> AddressClass {
    let bits = u128::from(address);
    let field = |shift: u32, width: u32| ((bits >> shift) & ((1 << width) - 1)) as u32;
    let carried = [
        field(64, 16) << 16 | field(40, 16), // a /48 prefix: bits 48-63, then 72-87
        field(64, 8) << 24 | field(32, 24),  // a /56 prefix: bits 56-63, then 72-95
        field(24, 32),                       // a /64 prefix: bits 72-103
        field(0, 32),                        // a /96 prefix: the last 32 bits
    ];
    let classes: Vec<AddressClass> = carried.into_iter().filter_map(|v4| classify_v4(Ipv4Addr::from(v4))).collect();
    // Not "unspecified": the other layouts of most addresses read as
    // 0.0.0.0/8, which a translator never reaches.
    let most_dangerous = [AddressClass::CloudMetadata, AddressClass::LinkLocal, AddressClass::Loopback];
    most_dangerous.into_iter().find(|class| classes.contains(class)).unwrap_or(AddressClass::Private)
}

/// The IPv4 address an IPv6 one reaches, when it carries one where the
/// address itself says: IPv4-mapped (`::ffff:a.b.c.d`), NAT64
/// (`64:ff9b::/96`), SIIT (`::ffff:0:a.b.c.d`), the old IPv4-compatible
/// form (`::a.b.c.d`, but `::` and `::1`), and 6to4 (`2002:AABB:CCDD::/48`).
fn carried_v4(address: Ipv6Addr) -> Option<Ipv4Addr> {
    if let Some(v4) = address.to_ipv4_mapped() {
        return Some(v4);
    }
    let segments = address.segments();
    let [.., high, low] = segments;
    let nat64 = segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] || segments[..6] == [0, 0, 0, 0, 0xffff, 0];
    let compatible = segments[..6] == [0, 0, 0, 0, 0, 0] && !address.is_loopback() && !address.is_unspecified();
    if nat64 || compatible {
        return Some(Ipv4Addr::from((u32::from(high) << 16) | u32::from(low)));
    }
    if segments[0] == 0x2002 {
        // 6to4 carries its IPv4 address in the second and third segments.
        return Some(Ipv4Addr::from((u32::from(segments[1]) << 16) | u32::from(segments[2])));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(text: &str) -> Option<AddressClass> {
        classify(text.parse().unwrap())
    }

    #[test]
    fn each_class_in_each_family() {
        use AddressClass::*;
        for (address, expected) in [
            ("169.254.169.254", CloudMetadata),
            ("100.100.100.200", CloudMetadata),
            ("168.63.129.16", CloudMetadata),
            ("192.0.0.192", CloudMetadata),
            ("fd00:ec2::254", CloudMetadata),
            ("fd00:ec2::23", CloudMetadata),
            ("fd20:ce::254", CloudMetadata),
            ("fd00:c1::a9fe:a9fe", CloudMetadata),
            ("fd00:42::42", CloudMetadata),
            ("127.0.0.1", Loopback),
            ("127.8.9.10", Loopback),
            ("::1", Loopback),
            ("10.0.0.1", Private),
            ("172.16.5.4", Private),
            ("192.168.1.1", Private),
            ("fc00::1", Private),
            ("fec0::1", Private),
            ("169.254.1.1", LinkLocal),
            ("fe80::1", LinkLocal),
            ("100.64.0.1", SharedNat),
            ("0.0.0.0", Unspecified),
            ("0.1.2.3", Unspecified),
            ("::", Unspecified),
            ("224.0.0.1", Multicast),
            ("ff02::1", Multicast),
            ("255.255.255.255", Reserved),
            ("240.0.0.1", Reserved),
            ("192.0.0.8", Reserved),
            ("192.88.99.1", Reserved),
            ("198.18.0.1", Benchmarking),
            ("2001:2::1", Benchmarking),
            ("2001:2:0:ffff::1", Benchmarking),
            ("192.0.2.1", Documentation),
            ("2001:db8::1", Documentation),
            ("3fff:fff::1", Documentation),
            ("5f00::1", Reserved),
            ("2001::1", Teredo),
            ("100::1", Discard),
        ] {
            assert_eq!(class(address), Some(expected), "{address}");
        }
        for address in ["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c", "8.8.8.8", "172.32.0.1", "2001:3::1", "3fff:1000::1"] {
            assert_eq!(class(address), None, "{address}");
        }
    }

    /// Every IPv6 form that carries an IPv4 address is classed as that
    /// address: here each carries 169.254.169.254, 168.63.129.16 and 10.0.0.1.
    #[test]
    fn an_ipv6_address_carrying_an_ipv4_one_is_that_address() {
        for (form, metadata, azure, private) in [
            ("IPv4-mapped", "::ffff:169.254.169.254", "::ffff:168.63.129.16", "::ffff:10.0.0.1"),
            ("NAT64", "64:ff9b::a9fe:a9fe", "64:ff9b::a83f:8110", "64:ff9b::a00:1"),
            ("SIIT", "::ffff:0:a9fe:a9fe", "::ffff:0:a83f:8110", "::ffff:0:a00:1"),
            ("IPv4-compatible", "::169.254.169.254", "::168.63.129.16", "::10.0.0.1"),
            ("6to4", "2002:a9fe:a9fe::1", "2002:a83f:8110::", "2002:a00:1::1"),
        ] {
            assert_eq!(class(metadata), Some(AddressClass::CloudMetadata), "{form}: {metadata}");
            assert_eq!(class(azure), Some(AddressClass::CloudMetadata), "{form}: {azure}");
            assert_eq!(class(private), Some(AddressClass::Private), "{form}: {private}");
        }
        // An internet address carried so is on the internet.
        assert_eq!(class("64:ff9b::808:808"), None);
        assert_eq!(class("2002:808:808::1"), None);
    }

    /// Local-use NAT64 carries its IPv4 address where its network's prefix
    /// length puts it, which the address does not say: 169.254.169.254 and
    /// 127.0.0.1 are found in each of the four layouts, and the rest of the
    /// range is private.
    #[test]
    fn local_use_nat64_is_what_it_could_carry_in_any_layout() {
        for (layout, metadata, loopback) in [
            ("/48", "64:ff9b:1:a9fe:a9:fe00::", "64:ff9b:1:7f00:0:100::"),
            ("/56", "64:ff9b:1:a9:fe:a9fe::", "64:ff9b:1:7f:0:1::"),
            ("/64", "64:ff9b:1:0:a9:fea9:fe00:0", "64:ff9b:1:0:7f:0:100:0"),
            ("/96", "64:ff9b:1::a9fe:a9fe", "64:ff9b:1::7f00:1"),
        ] {
            assert_eq!(class(metadata), Some(AddressClass::CloudMetadata), "{layout}: {metadata}");
            assert_eq!(class(loopback), Some(AddressClass::Loopback), "{layout}: {loopback}");
        }
        assert_eq!(class("64:ff9b:1::808:808"), Some(AddressClass::Private));
    }
}
