//! The target rules for requests to addresses a stranger names: loopback,
//! unspecified, private, shared, link-local, multicast and broadcast
//! addresses (also in IPv4-mapped IPv6 form) are refused unless private
//! targets are allowed. A host is resolved once and every address it
//! resolves to is checked, so the connection can be pinned to an address
//! that passed: a second lookup could answer otherwise (DNS rebinding).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Why a target is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetRefusal {
    /// The host did not resolve, or to no address.
    Unresolved,
    /// The host resolves to an address the rules refuse.
    Refused(IpAddr),
}

/// Whether `ip` is an address of this machine, its networks or no single
/// host: loopback, unspecified, private, shared, link-local, multicast or
/// broadcast, in IPv4, IPv6 or IPv4-mapped IPv6 form.
pub fn is_internal(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(ip) => is_internal_v4(ip),
        IpAddr::V6(ip) => match ip.to_ipv4_mapped() {
            Some(mapped) => is_internal_v4(mapped),
            None => is_internal_v6(ip),
        },
    }
}

fn is_internal_v4(ip: Ipv4Addr) -> bool {
    let [first, second, ..] = ip.octets();
    ip.is_loopback()
        || first == 0 // 0.0.0.0/8: "this network"
        || ip.is_private() // 10/8, 172.16/12, 192.168/16
        || (first == 100 && (64..128).contains(&second)) // 100.64.0.0/10, carrier-grade NAT
        || ip.is_link_local() // 169.254/16
        || ip.is_multicast() // 224/4
        || ip.is_broadcast()
}

fn is_internal_v6(ip: Ipv6Addr) -> bool {
    let first = ip.segments()[0];
    ip.is_loopback()
        || ip.is_unspecified()
        || (first & 0xfe00) == 0xfc00 // fc00::/7, unique local
        || (first & 0xffc0) == 0xfe80 // fe80::/10, link-local
        || ip.is_multicast() // ff00::/8
}

/// Every address `host` resolves to, once, each with `port`, if the rules
/// allow them all (`allow_internal`: any address). An IP literal is
/// checked as it is, without a lookup.
pub async fn resolve_checked(
    host: &url::Host<&str>,
    port: u16,
    allow_internal: bool,
) -> Result<Vec<SocketAddr>, TargetRefusal> {
    let addresses: Vec<SocketAddr> = match host {
        url::Host::Ipv4(ip) => vec![SocketAddr::new(IpAddr::V4(*ip), port)],
        url::Host::Ipv6(ip) => vec![SocketAddr::new(IpAddr::V6(*ip), port)],
        url::Host::Domain(name) => tokio::net::lookup_host((*name, port))
            .await
            .map_err(|_| TargetRefusal::Unresolved)?
            .collect(),
    };
    if addresses.is_empty() {
        return Err(TargetRefusal::Unresolved);
    }
    match addresses.iter().find(|address| is_internal(address.ip())) {
        Some(refused) if !allow_internal => Err(TargetRefusal::Refused(refused.ip())),
        _ => Ok(addresses),
    }
}

/// A client builder for an outside target whose host resolved to
/// `addresses` (checked by [`resolve_checked`]): the connection goes to
/// those addresses, not to a second lookup's; no proxy, no redirect followed.
pub fn pinned_client(host: &url::Host<&str>, addresses: &[SocketAddr]) -> reqwest::ClientBuilder {
    let builder = reqwest::Client::builder()
        .use_rustls_tls()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .user_agent(concat!("eds/", env!("CARGO_PKG_VERSION")));
    match host {
        url::Host::Domain(name) => builder.resolve_to_addrs(name, addresses),
        _ => builder,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn internal(ip: &str) -> bool {
        is_internal(ip.parse().unwrap())
    }

    #[test]
    fn loopback_is_refused_in_every_form() {
        for ip in ["127.0.0.1", "127.255.255.254", "::1", "::ffff:127.0.0.1"] {
            assert!(internal(ip), "{ip}");
        }
    }

    #[test]
    fn unspecified_addresses_and_this_network_are_refused() {
        for ip in ["0.0.0.0", "0.1.2.3", "0.255.255.255", "::", "::ffff:0.0.0.0"] {
            assert!(internal(ip), "{ip}");
        }
    }

    #[test]
    fn private_networks_are_refused() {
        for ip in [
            "10.0.0.1",
            "10.255.255.255",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "fc00::1",
            "fd12:3456::1",
            "::ffff:10.1.2.3",
            "::ffff:192.168.0.1",
        ] {
            assert!(internal(ip), "{ip}");
        }
        for ip in ["172.15.255.255", "172.32.0.1", "192.169.0.1", "fbff::1", "fe00::1"] {
            assert!(!internal(ip), "{ip}: just outside");
        }
    }

    #[test]
    fn the_shared_address_space_is_refused() {
        for ip in ["100.64.0.1", "100.127.255.255", "::ffff:100.100.100.100"] {
            assert!(internal(ip), "{ip}");
        }
        for ip in ["100.63.255.255", "100.128.0.1"] {
            assert!(!internal(ip), "{ip}: just outside");
        }
    }

    #[test]
    fn link_local_addresses_are_refused() {
        for ip in [
            "169.254.169.254",
            "169.254.0.1",
            "fe80::1",
            "febf::1",
            "::ffff:169.254.169.254",
        ] {
            assert!(internal(ip), "{ip}");
        }
        assert!(!internal("fec0::1"), "just outside fe80::/10");
    }

    #[test]
    fn multicast_and_broadcast_are_refused() {
        for ip in [
            "224.0.0.1",
            "239.255.255.255",
            "255.255.255.255",
            "ff02::1",
            "::ffff:224.0.0.1",
        ] {
            assert!(internal(ip), "{ip}");
        }
    }

    #[test]
    fn public_addresses_are_allowed() {
        for ip in [
            "93.184.216.34",
            "8.8.8.8",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
            "223.255.255.255",
        ] {
            assert!(!internal(ip), "{ip}");
        }
    }

    #[tokio::test]
    async fn a_literal_is_checked_without_a_lookup_and_allowed_only_when_internal_targets_are() {
        let loopback = url::Host::Ipv4(Ipv4Addr::LOCALHOST);
        assert_eq!(
            resolve_checked(&loopback, 443, false).await,
            Err(TargetRefusal::Refused(IpAddr::V4(Ipv4Addr::LOCALHOST)))
        );
        assert_eq!(
            resolve_checked(&loopback, 443, true).await,
            Ok(vec![SocketAddr::from(([127, 0, 0, 1], 443))])
        );
        let public = url::Host::Ipv6("2606:4700::1111".parse().unwrap());
        assert_eq!(resolve_checked(&public, 443, false).await.unwrap().len(), 1);
    }

    #[tokio::test]
    async fn a_name_is_refused_when_any_of_its_addresses_is() {
        let localhost = url::Host::Domain("localhost");
        assert!(matches!(
            resolve_checked(&localhost, 443, false).await,
            Err(TargetRefusal::Refused(ip)) if ip.is_loopback()
        ));
        let unresolvable = url::Host::Domain("no-such-host.invalid");
        assert_eq!(
            resolve_checked(&unresolvable, 443, false).await,
            Err(TargetRefusal::Unresolved)
        );
    }
}
