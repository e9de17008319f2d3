# Sourced by scripts that start a Triton on free ports.
#
#   read -r grpc http metrics < <(free_ports)
#
# Prints three TCP ports on 127.0.0.1 that the kernel reports free, held open
# together so they differ. A port can still be taken before Triton binds it:
# callers retry triton-up with new ports.
free_ports() {
	/usr/bin/python3.11 -c '
import socket
socks = [socket.socket() for _ in range(3)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in socks))
for s in socks:
    s.close()
'
}
