package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"os"

	"github.com/jackc/pgx/v5/pgconn"
)

// hostLockClass is the first key of the session advisory locks that
// claim host names; the second is hashtext of the name ("benchd" + 2).
const hostLockClass = int32(writeLockKey&0x7fffffff) + 2

// A HostClaim is this process's hold on its host name in a fleet's
// database: a session advisory lock on one connection of the pool, kept
// until Close (or until the session ends: a benchd killed, or its
// machine gone, which the server learns of within the keepalive times
// ClaimHost sets on the session).
type HostClaim struct {
	conn *sql.Conn
}

// Close gives the name up: the lock is released, then the connection
// dropped rather than returned to the pool, so nothing of the claim's
// session is reused.
func (c *HostClaim) Close() error {
	if c == nil || c.conn == nil {
		return nil
	}
	c.conn.ExecContext(context.Background(), `SELECT pg_advisory_unlock_all()`)
	c.conn.Raw(func(any) error { return driver.ErrBadConn })
	c.conn = nil
	return nil
}

// ClaimHost claims host's name for this process, so that no two live
// benchd of a fleet run under one name: each would take the other's
// running attempts for a crashed host's. A name another live benchd
// holds is an error matching ErrConflict naming that benchd (its
// process and machine, as it gave them) and where it connects from. On
// SQLite, which has one benchd (the state directory's lock), there is
// nothing to claim: the claim is nil.
func (s *Store) ClaimHost(ctx context.Context, host string) (*HostClaim, error) {
	if !s.OnPostgres() {
		return nil, nil
	}
	conn, err := s.w.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("unable to claim host name %s: %w", host, err)
	}
	claim := &HostClaim{conn: conn}
	machine, _ := os.Hostname()
	// A claim of a host that vanished (power lost, cable cut) ends when
	// the server finds its connection dead: within about half a minute,
	// not the two hours of the kernel's default keepalive.
	for _, q := range []string{
		`SET tcp_keepalives_idle = 10`,
		`SET tcp_keepalives_interval = 5`,
		`SET tcp_keepalives_count = 3`,
		// A holder that is going (a benchd restarted, its old session
		// still ending) is waited for, a live one is not.
		`SET lock_timeout = '5s'`,
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			claim.Close()
			return nil, fmt.Errorf("unable to claim host name %s: %w", host, err)
		}
	}
	if _, err := conn.ExecContext(ctx, `SELECT set_config('application_name', $1, false)`,
		fmt.Sprintf("benchd host %s (pid %d on %s)", host, os.Getpid(), machine)); err != nil {
		claim.Close()
		return nil, fmt.Errorf("unable to claim host name %s: %w", host, err)
	}
	_, err = conn.ExecContext(ctx, `SELECT pg_advisory_lock($1, hashtext($2))`, hostLockClass, host)
	var pe *pgconn.PgError
	switch {
	case err == nil:
		if _, err := conn.ExecContext(ctx, `SET lock_timeout = 0`); err != nil {
			claim.Close()
			return nil, fmt.Errorf("unable to claim host name %s: %w", host, err)
		}
		return claim, nil
	case !errors.As(err, &pe) || pe.Code != "55P03": // lock_not_available
		claim.Close()
		return nil, fmt.Errorf("unable to claim host name %s: %w", host, err)
	}
	var holder, from sql.NullString
	conn.QueryRowContext(ctx, `SELECT a.application_name, host(a.client_addr)
FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.granted AND l.classid = $1::int4::oid AND l.objid = hashtext($2)::oid AND l.objsubid = 2`,
		hostLockClass, host).Scan(&holder, &from)
	claim.Close()
	who := "another benchd"
	if holder.Valid && holder.String != "" {
		who = holder.String
	}
	if from.Valid && from.String != "" {
		who += " from " + from.String
	} else {
		who += " over a local socket"
	}
	return nil, fmt.Errorf("host name %s is live: %s holds it (give this benchd another --host): %w", host, who, ErrConflict)
}
