//! Reads that say when their bytes reached this machine's kernel.
//!
//! The driver shares two cores with the gateway and the upstream. When its one worker thread is
//! busy, an answer can sit in the socket for a millisecond or more before the task waiting for it
//! runs, and that wait is the driver's, not the server's. The kernel stamps every arriving segment
//! (`SO_TIMESTAMPNS`); the stamp of the last segment a read returns is when the answer's end
//! arrived, whatever the driver was doing then. Times taken this way are reported beside the ones
//! the driver's task sees, never instead of them.

use std::io::{self, IoSliceMut};
use std::os::fd::AsRawFd;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use nix::cmsg_space;
use nix::sys::socket::{ControlMessageOwned, MsgFlags, recvmsg, setsockopt, sockopt};
use nix::sys::time::TimeSpec;
use tokio::io::Interest;
use tokio::net::TcpStream;

/// Asks the kernel to stamp what arrives on `stream`. The first socket of a process to ask turns
/// stamping on for the whole machine, which takes effect a moment later: what arrives before then
/// has no stamp.
pub fn enable(stream: &TcpStream) -> io::Result<()> {
    setsockopt(stream, sockopt::ReceiveTimestampns, &true).map_err(io::Error::from)
}

/// Reads into `buf` as `AsyncReadExt::read` would, with the arrival time of the last segment read
/// (none on a socket without [`enable`], or at the end of the stream).
pub async fn read(stream: &TcpStream, buf: &mut [u8]) -> io::Result<(usize, Option<SystemTime>)> {
    loop {
        stream.readable().await?;
        match stream.try_io(Interest::READABLE, || receive(stream, buf)) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            other => return other,
        }
    }
}

fn receive(stream: &TcpStream, buf: &mut [u8]) -> io::Result<(usize, Option<SystemTime>)> {
    let mut control = cmsg_space!(TimeSpec);
    let mut iov = [IoSliceMut::new(buf)];
    let message = recvmsg::<()>(
        stream.as_raw_fd(),
        &mut iov,
        Some(&mut control),
        MsgFlags::MSG_DONTWAIT,
    )
    .map_err(io::Error::from)?;
    let arrived = message
        .cmsgs()
        .map_err(io::Error::from)?
        .find_map(|cmsg| match cmsg {
            ControlMessageOwned::ScmTimestampns(at) => wall_time(at),
            _ => None,
        });
    Ok((message.bytes, arrived))
}

fn wall_time(at: TimeSpec) -> Option<SystemTime> {
    let secs = u64::try_from(at.tv_sec()).ok()?;
    let nanos = u32::try_from(at.tv_nsec()).ok()?;
    UNIX_EPOCH.checked_add(Duration::new(secs, nanos))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;
    use tokio::net::TcpListener;

    #[tokio::test]
    async fn a_read_is_stamped_with_when_its_bytes_arrived_not_when_it_ran() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let client = TcpStream::connect(addr).await.unwrap();
        enable(&client).unwrap();
        let (mut server, _) = listener.accept().await.unwrap();
        let mut buf = [0u8; 16];
        // Stamping starts a moment after the first socket asks for it.
        for _ in 0..100 {
            server.write_all(b"w").await.unwrap();
            if read(&client, &mut buf).await.unwrap().1.is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }

        let before = SystemTime::now();
        server.write_all(b"hello").await.unwrap();
        let written = SystemTime::now();
        // The bytes wait in the socket while the reader is busy elsewhere.
        std::thread::sleep(Duration::from_millis(50));
        let (n, arrived) = read(&client, &mut buf).await.unwrap();
        let read_at = SystemTime::now();

        assert_eq!(&buf[..n], b"hello");
        let arrived = arrived.expect("a stamp on a socket that asked for one");
        assert!(
            arrived >= before && arrived <= written,
            "stamped {arrived:?}, written between {before:?} and {written:?}"
        );
        assert!(read_at.duration_since(arrived).unwrap() >= Duration::from_millis(50));
    }

    #[tokio::test]
    async fn a_socket_that_did_not_ask_gets_no_stamp() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
        let (mut server, _) = listener.accept().await.unwrap();
        server.write_all(b"x").await.unwrap();
        let mut buf = [0u8; 4];
        let (n, arrived) = read(&client, &mut buf).await.unwrap();
        assert_eq!((n, arrived), (1, None));
    }
}
