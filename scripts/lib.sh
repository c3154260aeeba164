# Shell helpers the benchmark scripts source (bash).
# py: python3 itself, not a version manager's shell shim.
py=${py:-$(python3 -c 'import sys; print(sys.executable)')}
# free_ports N: N distinct free ports on 127.0.0.1, held open together while they are picked (ports picked
# one call at a time can repeat: a run once gave the metrics listener and the remoting port the same number).
free_ports() { "$py" -c 'import socket,sys; ss=[socket.socket() for _ in range(int(sys.argv[1]))]; [s.bind(("127.0.0.1",0)) for s in ss]; print(" ".join(str(s.getsockname()[1]) for s in ss))' "$1"; }
# wait_port PORT: until something accepts on 127.0.0.1:PORT (10 s at most; status 1 then).
wait_port() { for _ in $(seq 1 200); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.05; done; return 1; }
