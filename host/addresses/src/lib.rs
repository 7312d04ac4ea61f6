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
//! An IPv6 address that carries an IPv4 one (IPv4-mapped, NAT64 and its
//! local-use range, SIIT, the old IPv4-compatible form, 6to4) is classed
//! as the IPv4 address it reaches: `64:ff9b::a9fe:a9fe` is
//! 169.254.169.254.
#![warn(missing_docs)]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A kind of address no request should reach by a name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressClass {
    /// A cloud provider's metadata or host service, which hands out the
    /// machine's credentials: 169.254.169.254 (most clouds),
    /// 100.100.100.200 (Alibaba Cloud), 168.63.129.16 (Azure's
    /// WireServer), fd00:ec2::254 (AWS over IPv6).
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
    /// Reserved: 240/4 and the broadcast address, 192.0.0/24, 192.88.99/24.
    Reserved,
    /// Benchmarking: 198.18/15, 2001:2::/48.
    Benchmarking,
    /// Documentation: 192.0.2/24, 198.51.100/24, 203.0.113/24, 2001:db8::/32.
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
            || address == Ipv4Addr::new(168, 63, 129, 16) =>
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

fn classify_v6(address: Ipv6Addr) -> Option<AddressClass> {
    if let Some(v4) = carried_v4(address) {
        return classify_v4(v4);
    }
    let segments = address.segments();
    Some(match () {
        _ if segments == [0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254] => AddressClass::CloudMetadata,
        _ if address.is_loopback() => AddressClass::Loopback,
        _ if address.is_unspecified() => AddressClass::Unspecified,
        _ if address.is_multicast() => AddressClass::Multicast,
        _ if (segments[0] & 0xffc0) == 0xfe80 => AddressClass::LinkLocal,
        _ if (segments[0] & 0xfe00) == 0xfc00 || (segments[0] & 0xffc0) == 0xfec0 => AddressClass::Private,
        _ if segments[0] == 0x2001 && segments[1] == 0 => AddressClass::Teredo,
        _ if segments[0] == 0x2001 && segments[1] == 0x0db8 => AddressClass::Documentation,
        _ if segments[..3] == [0x2001, 0x0002, 0] => AddressClass::Benchmarking,
        _ if segments[0] == 0x0100 && segments[1..4] == [0, 0, 0] => AddressClass::Discard,
        _ => return None,
    })
}

/// The IPv4 address an IPv6 one reaches, when it carries one: IPv4-mapped
/// (`::ffff:a.b.c.d`), NAT64 (`64:ff9b::/96`, and the local-use
/// `64:ff9b:1::/48`), SIIT (`::ffff:0:a.b.c.d`), the old IPv4-compatible
/// form (`::a.b.c.d`, but `::` and `::1`), and 6to4 (`2002:AABB:CCDD::/48`).
fn carried_v4(address: Ipv6Addr) -> Option<Ipv4Addr> {
    if let Some(v4) = address.to_ipv4_mapped() {
        return Some(v4);
    }
    let segments = address.segments();
    let [.., high, low] = segments;
    let nat64 =
        segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] || segments[..3] == [0x64, 0xff9b, 1] || segments[..6] == [0, 0, 0, 0, 0xffff, 0];
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
            ("fd00:ec2::254", CloudMetadata),
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
            ("2001::1", Teredo),
            ("100::1", Discard),
        ] {
            assert_eq!(class(address), Some(expected), "{address}");
        }
        for address in ["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c", "8.8.8.8", "172.32.0.1", "2001:3::1"] {
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
            ("local-use NAT64", "64:ff9b:1::a9fe:a9fe", "64:ff9b:1::a83f:8110", "64:ff9b:1::a00:1"),
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
}
