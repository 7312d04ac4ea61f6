//! The connections a front serves (MCP at `--http`, the operator's endpoints
//! at `--metrics`): a bounded number of places, shared fairly between client
//! networks, and a deadline on every write, so that no client, with or
//! without a token, can hold the places others need.
//!
//! - **Caps per client network.** One network (an IPv4 address, an IPv6
//!   /64) holds at most `per_client` places, and one prefix (an IPv4 /24, an
//!   IPv6 /48) at most `per_prefix`; a connection past either is answered 503
//!   at once and closed, before anything is read.
//! - **Shedding by cost.** When every place is taken, a new connection takes
//!   the place of one that costs the others most: first a connection whose
//!   client has read nothing of what it was sent for [`STALLED_AFTER`] (its
//!   write stalled); else an idle one, from the network holding the most places, the
//!   one with the most refused requests, the one idle longest. A connection is
//!   never shed before it had [`FIRST_REQUEST_GRACE`] to send its first
//!   request, and one busy with a request is never shed unless its write is
//!   stalled. One picked with nothing under way, or stalled, is closed at
//!   once (hyper's graceful shutdown would wait for a request begun in its
//!   buffer until the header timeout, holding the place meanwhile).
//! - **A write deadline.** A write that waits for the client to read for
//!   [`WRITE_STALL_TIMEOUT`] with no byte taken ends the connection: hyper
//!   has no write timeout, and its header timeout runs only while it waits
//!   for a request, so a client that sends requests and never reads the
//!   answers would otherwise hold its connection for ever. What hyper holds
//!   for a client that does not read is bounded by
//!   [`CONNECTION_BUFFER_BYTES`].

use std::collections::HashMap;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// How long a write may wait for the client to read, with no byte taken,
/// before the connection is closed.
pub(super) const WRITE_STALL_TIMEOUT: Duration = Duration::from_secs(10);

/// hyper's read and write buffers per connection, at most: the answers a
/// client has not read that the host holds (besides the kernel's socket
/// buffer), and the largest request head.
pub(super) const CONNECTION_BUFFER_BYTES: usize = 64 * 1024;

/// How long a new connection has to send its first request before it may
/// be shed to make room for another.
pub(super) const FIRST_REQUEST_GRACE: Duration = Duration::from_secs(2);

/// How long a write must have waited for the client to read before its
/// connection counts as stalled (the first to be closed for a new one): a
/// send buffer full for a moment is an honest client on a slow link.
pub(super) const STALLED_AFTER: Duration = Duration::from_secs(2);

/// How often a front waiting for a place looks again for one to shed,
/// besides when a connection becomes idle, stalls or closes: a connection
/// leaves its first-request grace without any event.
const SHED_RECHECK: Duration = Duration::from_millis(250);

/// How many places a front has, and how many one client network and one
/// prefix may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ConnectionCaps {
    pub in_all: usize,
    pub per_client: usize,
    pub per_prefix: usize,
    /// The option that sets `per_client`, as a refusal names it.
    pub per_client_option: &'static str,
}

/// The connections being served, at most `caps.in_all`.
pub(super) struct Connections {
    caps: ConnectionCaps,
    places: Arc<Semaphore>,
    states: Arc<Mutex<ConnectionStates>>,
    /// Notified when a connection becomes idle, stalls or closes.
    changed: Arc<tokio::sync::Notify>,
}

#[derive(Default)]
struct ConnectionStates {
    next_id: u64,
    open: HashMap<u64, ConnectionState>,
    /// Places held, per client network and per prefix.
    clients: HashMap<IpAddr, usize>,
    prefixes: HashMap<IpAddr, usize>,
}

struct ConnectionState {
    client: IpAddr,
    opened: Instant,
    /// Requests that arrived on it.
    requests: u64,
    /// Requests refused (a 4xx answer).
    refusals: u64,
    /// Requests under way (their responses not yet sent or dropped).
    busy: usize,
    /// Since when none has been, if none is.
    idle_since: Option<Instant>,
    /// Since when a write has waited for the client to read, if one does.
    write_waiting_since: Option<Instant>,
    shed: CancellationToken,
}

impl ConnectionState {
    /// Whether its client has read nothing of what it was sent for
    /// [`STALLED_AFTER`].
    fn stalled(&self, now: Instant) -> bool {
        self.write_waiting_since.is_some_and(|since| now.duration_since(since) >= STALLED_AFTER)
    }

    /// Whether it may be shed to make room: stalled, or idle after its
    /// first request or its first-request grace.
    fn sheddable(&self, now: Instant) -> bool {
        !self.shed.is_cancelled()
            && (self.stalled(now) || (self.busy == 0 && (self.requests > 0 || now.duration_since(self.opened) >= FIRST_REQUEST_GRACE)))
    }
}

/// Why a connection got no place.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct NoPlace(pub String);

impl Connections {
    pub(super) fn new(caps: ConnectionCaps) -> Connections {
        Connections { caps, places: Arc::new(Semaphore::new(caps.in_all)), states: Default::default(), changed: Default::default() }
    }

    /// A place for a new connection from `peer`. If its network or prefix
    /// holds its cap, one of that network's (or prefix's) own connections is
    /// closed for it (see [`Connections::shed_costliest`]), or, if none may
    /// be, it is refused; else a free place, or the place of the connection
    /// that costs most, closed for it; or, while none can be, the first to
    /// be freed.
    pub(super) async fn place(&self, peer: IpAddr) -> Result<ConnectionSlot, NoPlace> {
        let (client, prefix) = (client_network(peer), client_prefix(peer));
        loop {
            // Woken when a connection becomes idle, stalls or closes.
            let changed = self.changed.notified();
            {
                let mut states = self.states.lock().expect("never poisoned");
                match self.over_cap(&states, client, prefix) {
                    Some((scope, refusal)) => {
                        if !shed_costliest(&mut states, Some(scope)) {
                            return Err(refusal);
                        }
                    }
                    None => {
                        if let Ok(permit) = self.places.clone().try_acquire_owned() {
                            return Ok(self.register(&mut states, client, permit));
                        }
                        // Its place comes back as it closes.
                        shed_costliest(&mut states, None);
                    }
                }
            }
            tokio::select! {
                () = changed => {}
                () = tokio::time::sleep(SHED_RECHECK) => {}
            }
        }
    }

    /// The cap `client`'s network or `prefix` holds, if either does, and
    /// the refusal naming it. A cap as large as the whole front is none.
    fn over_cap(&self, states: &ConnectionStates, client: IpAddr, prefix: IpAddr) -> Option<(Scope, NoPlace)> {
        let holds = |counts: &HashMap<IpAddr, usize>, key: IpAddr, cap: usize| {
            cap < self.caps.in_all && counts.get(&key).is_some_and(|held| *held >= cap)
        };
        if holds(&states.clients, client, self.caps.per_client) {
            let refusal = format!(
                "service unavailable: this client holds its maximum of {} connections ({}), each busy; retry later",
                self.caps.per_client, self.caps.per_client_option
            );
            return Some((Scope::Client(client), NoPlace(refusal)));
        }
        if holds(&states.prefixes, prefix, self.caps.per_prefix) {
            let bits = if prefix.is_ipv4() { 24 } else { 48 };
            let refusal = format!(
                "service unavailable: this client's /{bits} holds its maximum of {} connections, each busy; retry later",
                self.caps.per_prefix
            );
            return Some((Scope::Prefix(prefix), NoPlace(refusal)));
        }
        None
    }

    fn register(&self, states: &mut ConnectionStates, client: IpAddr, permit: tokio::sync::OwnedSemaphorePermit) -> ConnectionSlot {
        states.next_id += 1;
        let id = states.next_id;
        let shed = CancellationToken::new();
        let now = Instant::now();
        states.open.insert(
            id,
            ConnectionState {
                client,
                opened: now,
                requests: 0,
                refusals: 0,
                busy: 0,
                idle_since: Some(now),
                write_waiting_since: None,
                shed: shed.clone(),
            },
        );
        *states.clients.entry(client).or_default() += 1;
        *states.prefixes.entry(client_prefix(client)).or_default() += 1;
        ConnectionSlot { id, shed, states: self.states.clone(), changed: self.changed.clone(), permit: Some(permit) }
    }
}

/// Whose connections a shedding picks from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// One client network's.
    Client(IpAddr),
    /// One prefix's.
    Prefix(IpAddr),
}

impl Scope {
    fn holds(self, state: &ConnectionState) -> bool {
        match self {
            Scope::Client(client) => state.client == client,
            Scope::Prefix(prefix) => client_prefix(state.client) == prefix,
        }
    }
}

/// Closes the connection (of `scope`, or any) that costs the others most,
/// if one may be shed and none shed to make room is still closing (its place
/// is coming): first one whose write stalled, then one from the network
/// holding the most places, the one with the most refused requests, the one
/// idle longest. Returns whether a place is coming.
fn shed_costliest(states: &mut ConnectionStates, scope: Option<Scope>) -> bool {
    let in_scope = |state: &ConnectionState| scope.is_none_or(|scope| scope.holds(state));
    // A shed connection that took a request as it was picked finishes it
    // first: if that is a long-lived stream, its place is not coming, so
    // only a shed connection with nothing under way, or stalled (each
    // closed at once), counts as closing.
    let now = Instant::now();
    if states.open.values().any(|state| in_scope(state) && state.shed.is_cancelled() && (state.busy == 0 || state.stalled(now))) {
        return true;
    }
    let clients = &states.clients;
    let Some(state) = states.open.values_mut().filter(|state| in_scope(state) && state.sheddable(now)).max_by_key(|state| {
        (
            state.stalled(now),
            clients.get(&state.client).copied().unwrap_or(0),
            state.refusals,
            std::cmp::Reverse(state.idle_since.unwrap_or(now)),
        )
    }) else {
        return false;
    };
    state.shed.cancel();
    true
}

/// One connection's place, given back (and forgotten) when dropped.
pub(super) struct ConnectionSlot {
    id: u64,
    /// Cancelled when the connection is to close, to make room.
    pub shed: CancellationToken,
    states: Arc<Mutex<ConnectionStates>>,
    changed: Arc<tokio::sync::Notify>,
    /// `None` only while being dropped.
    permit: Option<tokio::sync::OwnedSemaphorePermit>,
}

impl ConnectionSlot {
    fn with_state(&self, change: impl FnOnce(&mut ConnectionState)) {
        if let Some(state) = self.states.lock().expect("never poisoned").open.get_mut(&self.id) {
            change(state);
        }
    }

    /// Marks the connection busy with a request until the [`Busy`] is
    /// dropped.
    pub(super) fn busy(self: &Arc<Self>) -> Busy {
        self.with_state(|state| {
            state.requests += 1;
            state.busy += 1;
            state.idle_since = None;
        });
        Busy(self.clone())
    }

    /// Counts a request refused on the connection.
    pub(super) fn refused(&self) {
        self.with_state(|state| state.refusals += 1);
    }

    /// Whether, picked to make room, it closes at once: it has nothing under
    /// way (hyper's graceful shutdown would wait for a request begun in its
    /// buffer until the header timeout), or its client reads nothing.
    pub(super) fn closes_at_once(&self) -> bool {
        let now = Instant::now();
        self.states.lock().expect("never poisoned").open.get(&self.id).is_some_and(|state| state.busy == 0 || state.stalled(now))
    }

    fn set_write_waiting(&self, waiting: bool) {
        self.with_state(|state| state.write_waiting_since = waiting.then(Instant::now));
    }
}

/// One connection fewer from `key`; a key with none left is forgotten.
fn count_down(counts: &mut HashMap<IpAddr, usize>, key: IpAddr) {
    if let Some(count) = counts.get_mut(&key) {
        *count -= 1;
        if *count == 0 {
            counts.remove(&key);
        }
    }
}

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        {
            let mut guard = self.states.lock().expect("never poisoned");
            let states = &mut *guard;
            if let Some(state) = states.open.remove(&self.id) {
                count_down(&mut states.clients, state.client);
                count_down(&mut states.prefixes, client_prefix(state.client));
            }
        }
        // The place is free before a waiting accept loop wakes to take it.
        drop(self.permit.take());
        self.changed.notify_waiters();
    }
}

/// A request under way on a connection: while one is, it is not shed
/// (unless its write stalls).
pub(super) struct Busy(Arc<ConnectionSlot>);

impl Drop for Busy {
    fn drop(&mut self) {
        let place = &self.0;
        let mut became_idle = false;
        place.with_state(|state| {
            state.busy -= 1;
            if state.busy == 0 {
                state.idle_since = Some(Instant::now());
                became_idle = true;
            }
        });
        if became_idle {
            place.changed.notify_waiters();
        }
    }
}

/// A connection's socket whose writes may wait for the client to read at
/// most [`WRITE_STALL_TIMEOUT`] with no byte taken; past it, a write fails
/// with `TimedOut` and hyper closes the connection. The stall is reported
/// to the connection's place, so that shedding can close it at once.
pub(super) struct WriteDeadline<IO> {
    io: IO,
    /// Armed when a write first waits, disarmed when one takes a byte.
    stalled: Option<Pin<Box<tokio::time::Sleep>>>,
    place: Option<Arc<ConnectionSlot>>,
}

impl<IO> WriteDeadline<IO> {
    pub(super) fn new(io: IO, place: Option<Arc<ConnectionSlot>>) -> WriteDeadline<IO> {
        WriteDeadline { io, stalled: None, place }
    }

    /// `polled`, the result of a write, as the deadline has it.
    fn after_write<T>(&mut self, polled: Poll<std::io::Result<T>>, context: &mut Context<'_>) -> Poll<std::io::Result<T>> {
        match polled {
            Poll::Pending => {
                let sleep = match &mut self.stalled {
                    Some(sleep) => sleep,
                    None => {
                        if let Some(place) = &self.place {
                            place.set_write_waiting(true);
                        }
                        self.stalled.insert(Box::pin(tokio::time::sleep(WRITE_STALL_TIMEOUT)))
                    }
                };
                match sleep.as_mut().poll(context) {
                    Poll::Ready(()) => Poll::Ready(Err(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        format!("the client read nothing for {} s", WRITE_STALL_TIMEOUT.as_secs()),
                    ))),
                    Poll::Pending => Poll::Pending,
                }
            }
            ready => {
                if self.stalled.take().is_some()
                    && let Some(place) = &self.place
                {
                    place.set_write_waiting(false);
                }
                ready
            }
        }
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for WriteDeadline<IO> {
    fn poll_read(self: Pin<&mut Self>, context: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_read(context, buf)
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for WriteDeadline<IO> {
    fn poll_write(self: Pin<&mut Self>, context: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.io).poll_write(context, buf);
        this.after_write(polled, context)
    }

    fn poll_write_vectored(self: Pin<&mut Self>, context: &mut Context<'_>, bufs: &[std::io::IoSlice<'_>]) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.io).poll_write_vectored(context, bufs);
        this.after_write(polled, context)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.io).poll_flush(context);
        this.after_write(polled, context)
    }

    fn poll_shutdown(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.io).poll_shutdown(context);
        this.after_write(polled, context)
    }
}

/// Answers a connection that got no place with 503 and `refusal`, without
/// reading from it or waiting, and closes it.
pub(super) fn refuse(stream: tokio::net::TcpStream, refusal: &NoPlace) {
    let body = format!("{}\n", refusal.0);
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\n\
         connection: close\r\n\r\n{body}",
        body.len()
    );
    // The socket's buffer is empty: the answer fits, or is cut, never waited for.
    let _ = stream.try_write(answer.as_bytes());
    if let Ok(stream) = stream.into_std() {
        let _ = stream.shutdown(std::net::Shutdown::Write);
    }
}

/// The network a client address stands for: an IPv4 address itself, an IPv6
/// address its /64 (what one site is usually given).
pub(super) fn client_network(peer: IpAddr) -> IpAddr {
    masked(peer, 32, 64)
}

/// The prefix a client address is counted in with its neighbours: an IPv4
/// /24, an IPv6 /48.
pub(super) fn client_prefix(peer: IpAddr) -> IpAddr {
    masked(peer, 24, 48)
}

/// `peer`'s first `v4_bits` or `v6_bits` (an IPv4-mapped IPv6 address as IPv4).
fn masked(peer: IpAddr, v4_bits: u32, v6_bits: u32) -> IpAddr {
    let v4 = |v4: std::net::Ipv4Addr| IpAddr::V4((u32::from(v4) & (u32::MAX.checked_shl(32 - v4_bits).unwrap_or(0))).into());
    match peer {
        IpAddr::V4(address) => v4(address),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(address) => v4(address),
            None => IpAddr::V6((u128::from(v6) & (u128::MAX.checked_shl(128 - v6_bits).unwrap_or(0))).into()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(in_all: usize, per_client: usize, per_prefix: usize) -> ConnectionCaps {
        ConnectionCaps { in_all, per_client, per_prefix, per_client_option: "--max-connections-per-client" }
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[tokio::test]
    async fn a_client_network_and_its_prefix_hold_at_most_their_caps() {
        let connections = Connections::new(caps(16, 2, 3));
        // New connections (within their first-request grace): none may go.
        let _first = connections.place(ip("10.0.0.1")).await.unwrap();
        let second = connections.place(ip("10.0.0.1")).await.unwrap();
        assert_eq!(
            connections.place(ip("10.0.0.1")).await.err().unwrap().0,
            "service unavailable: this client holds its maximum of 2 connections (--max-connections-per-client), each busy; \
             retry later"
        );
        let _third = connections.place(ip("10.0.0.2")).await.unwrap();
        assert_eq!(
            connections.place(ip("10.0.0.3")).await.err().unwrap().0,
            "service unavailable: this client's /24 holds its maximum of 3 connections, each busy; retry later"
        );
        // Another prefix is not counted with them; a place given back is free again.
        let _elsewhere = connections.place(ip("10.0.1.1")).await.unwrap();
        drop(second);
        let again = Arc::new(connections.place(ip("10.0.0.1")).await.unwrap());
        // At its cap, a client's own idle connection makes room for its new one.
        drop(again.busy());
        let waiting = tokio::spawn({
            let connections = Arc::new(connections);
            async move { connections.place(ip("10.0.0.1")).await.map(|_| ()) }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(again.shed.is_cancelled());
        drop(again);
        assert_eq!(waiting.await.unwrap(), Ok(()));
    }

    #[tokio::test]
    async fn a_stalled_connection_is_shed_first_then_the_network_holding_most_then_the_most_refused() {
        let connections = Connections::new(caps(4, 4, 4));
        let one_a = Arc::new(connections.place(ip("10.0.0.1")).await.unwrap());
        let one_b = Arc::new(connections.place(ip("10.0.0.1")).await.unwrap());
        let two = Arc::new(connections.place(ip("10.0.1.1")).await.unwrap());
        let three = Arc::new(connections.place(ip("10.0.2.1")).await.unwrap());
        let shed = |scope| shed_costliest(&mut connections.states.lock().unwrap(), scope);
        // None has sent a request, and each is within its grace: none may go.
        assert!(!shed(None));
        for place in [&one_a, &one_b, &two, &three] {
            drop(place.busy());
        }
        // The other network's connection refused more, but 10.0.0.1 holds two places.
        three.refused();
        three.refused();
        one_b.refused();
        // A busy one whose write stalled goes before any idle one.
        let busy = two.busy();
        two.with_state(|state| state.write_waiting_since = Some(Instant::now() - STALLED_AFTER));
        // Within one network, its own.
        assert!(shed(Some(Scope::Client(ip("10.0.2.1")))));
        assert!(three.shed.is_cancelled() && !two.shed.is_cancelled());
        drop(three);
        assert!(shed(None));
        assert!(two.shed.is_cancelled() && !one_a.shed.is_cancelled() && !one_b.shed.is_cancelled());
        drop((busy, two));
        assert!(shed(None));
        assert!(one_b.shed.is_cancelled() && !one_a.shed.is_cancelled());
        drop(one_b);
        // Picked already and closing: no second one while its place comes.
        let other = Arc::new(connections.place(ip("10.0.3.1")).await.unwrap());
        drop(other.busy());
        other.refused();
        assert!(shed(None));
        assert!(other.shed.is_cancelled() && !one_a.shed.is_cancelled(), "one refusal more than 10.0.0.1's");
        assert!(shed(None));
        assert!(!one_a.shed.is_cancelled());
    }

    #[tokio::test]
    async fn a_busy_connection_is_never_shed_and_a_shed_idle_one_counts_as_a_place_coming() {
        let connections = Connections::new(caps(1, 1, 1));
        let shed = || shed_costliest(&mut connections.states.lock().unwrap(), None);
        let only = Arc::new(connections.place(ip("10.0.0.1")).await.unwrap());
        let busy = only.busy();
        assert!(!shed());
        drop(busy);
        assert!(shed());
        assert!(only.shed.is_cancelled());
        // Picked already: no second one is picked while its place comes.
        assert!(shed());
    }

    #[test]
    fn clients_are_counted_by_network_and_prefix() {
        assert_eq!(client_network(ip("2001:db8:1:2:3:4:5:6")), ip("2001:db8:1:2::"));
        assert_eq!(client_network(ip("::ffff:10.0.0.1")), ip("10.0.0.1"));
        assert_eq!(client_prefix(ip("2001:db8:1:2:3:4:5:6")), ip("2001:db8:1::"));
        assert_eq!(client_prefix(ip("::ffff:10.0.7.1")), ip("10.0.7.0"));
    }
}
