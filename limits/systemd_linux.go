package limits

import (
	"context"
	"fmt"
	"os"

	"github.com/godbus/dbus/v5"
)

// systemdRunning reports whether systemd is the service manager (the
// test sd_booted(3) makes).
func systemdRunning() bool {
	fi, err := os.Lstat("/run/systemd/system")
	return err == nil && fi.IsDir()
}

// dbusProp is one (sv) property of StartTransientUnit.
type dbusProp struct {
	Name  string
	Value dbus.Variant
}

// dbusAux is one (sa(sv)) auxiliary unit of StartTransientUnit.
type dbusAux struct {
	Name  string
	Props []dbusProp
}

// systemdScope asks systemd (org.freedesktop.systemd1.Manager's
// StartTransientUnit, as `systemd-run --scope` does for a new command) for
// a scope unit "benchd-<pid>.scope" with Delegate=yes holding pid, which
// systemd moves there. The scope ends when its last process does.
func systemdScope(ctx context.Context, pid int) (string, error) {
	conn, err := dbus.ConnectSystemBus(dbus.WithContext(ctx))
	if err != nil {
		return "", fmt.Errorf("connect to the system bus: %w", err)
	}
	defer conn.Close()
	unit := fmt.Sprintf("benchd-%d.scope", pid)
	props := []dbusProp{
		{"Description", dbus.MakeVariant(fmt.Sprintf("benchd (pid %d) and the groups of its attempts", pid))},
		{"PIDs", dbus.MakeVariant([]uint32{uint32(pid)})},
		{"Delegate", dbus.MakeVariant(true)},
		{"CollectMode", dbus.MakeVariant("inactive-or-failed")},
	}
	var job dbus.ObjectPath
	obj := conn.Object("org.freedesktop.systemd1", "/org/freedesktop/systemd1")
	call := obj.CallWithContext(ctx, "org.freedesktop.systemd1.Manager.StartTransientUnit", 0,
		unit, "fail", props, []dbusAux{})
	if err := call.Store(&job); err != nil {
		return "", fmt.Errorf("start %s: %w", unit, err)
	}
	return unit, nil
}
