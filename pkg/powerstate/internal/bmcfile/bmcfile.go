// Package bmcfile reads the files a machine's BMC settings name (username,
// password, CA), as the ipmi and redfish sources ask for each question: a
// file is looked at (one stat) at most once per recheck, and read again
// only when its inode, size or modification time changed, so that a
// rotated password is read within a second without a system call per file
// per question (500 BMCs asked every 10 s share a few Secret files).
package bmcfile

import (
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// recheck is how long a file's last look is trusted: a changed file is
// read at most this long after its change.
var recheck = time.Second

// now is the clock of the checks (tests set it).
var now = time.Now

// entry is a file as last read.
type entry struct {
	ino   uint64 // a Secret volume's update writes new files
	size  int64
	mod   time.Time
	data  []byte
	certs *x509.CertPool // the data's certificates, once asked for
	// checked is when the file was last seen unchanged (Unix nanoseconds).
	checked atomic.Int64
}

// same reports whether fi is the file e was read from.
func (e *entry) same(fi os.FileInfo) bool {
	return e.ino == inode(fi) && e.size == fi.Size() && e.mod.Equal(fi.ModTime())
}

var (
	mu    sync.Mutex
	files = map[string]*entry{}
)

// read returns path's entry: the one read before while its last look is
// younger than recheck; else after a stat, read again when the file
// changed. A file that cannot be stat'ed or opened is an error (that of
// stat or open) each time it is looked at.
func read(path string) (*entry, error) {
	t := now()
	mu.Lock()
	e, ok := files[path]
	mu.Unlock()
	if ok && t.Sub(time.Unix(0, e.checked.Load())) < recheck {
		return e, nil
	}
	if fi, err := os.Stat(path); err != nil {
		return nil, err
	} else if ok && e.same(fi) {
		e.checked.Store(t.UnixNano())
		return e, nil
	}
	f, err := os.Open(path) //nolint:gosec // a file the operator named in the config
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	e = &entry{ino: inode(fi), size: fi.Size(), mod: fi.ModTime(), data: data}
	e.checked.Store(t.UnixNano())
	mu.Lock()
	files[path] = e
	mu.Unlock()
	return e, nil
}

// inode is fi's inode number, 0 where the system does not tell.
func inode(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}

// ReadFile is path's content.
func ReadFile(path string) ([]byte, error) {
	e, err := read(path)
	if err != nil {
		return nil, err
	}
	return e.data, nil
}

// Credentials reads a machine's username and password files, each without
// its line end; an error names the field (usernameFile, passwordFile).
func Credentials(userFile, passFile string) (user, pass string, err error) {
	var errs []error
	for _, f := range []struct {
		name, path string
		into       *string
	}{{"usernameFile", userFile, &user}, {"passwordFile", passFile, &pass}} {
		if f.path == "" {
			errs = append(errs, fmt.Errorf("%s: required", f.name))
			continue
		}
		b, err := ReadFile(f.path)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f.name, err))
			continue
		}
		*f.into = strings.TrimRight(string(b), "\r\n")
	}
	return user, pass, errors.Join(errs...)
}

// CertPool is the certificates of the PEM file at path, and its content.
func CertPool(path string) (*x509.CertPool, []byte, error) {
	e, err := read(path)
	if err != nil {
		return nil, nil, err
	}
	mu.Lock()
	defer mu.Unlock()
	if e.certs == nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(e.data) {
			return nil, nil, fmt.Errorf("%s: no PEM certificate", path)
		}
		e.certs = pool
	}
	return e.certs, e.data, nil
}
