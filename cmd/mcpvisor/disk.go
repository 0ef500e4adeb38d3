package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/persistence"
)

// diskReserveFlag is --disk-reserve, on the commands that keep the journal
// open while servers run (run, serve, stdio).
func diskReserveFlag(fs *flag.FlagSet, f *flags) {
	f.diskReserve = persistence.DefaultDiskReserve
	fs.Var(&f.diskReserve, "disk-reserve", "the free `SIZE` the journal keeps on its filesystem (bytes, or with KiB, MiB, GiB, TiB, KB, MB, GB or TB): "+
		"below it the journal turns read-only, while servers and calls go on, until the space returns; 0 turns the check off")
}

// journalOptions are the journal's options as the flags set them.
func (f flags) journalOptions() mcpvisor.JournalOptions {
	reserve := int64(f.diskReserve)
	if reserve == 0 {
		reserve = -1 // JournalOptions: <0 not watched; 0 would be the default
	}
	return mcpvisor.JournalOptions{DiskReserve: reserve}
}

// byteSize is a number of bytes written as a person writes it: 1048576,
// 512KiB, 256MiB, 1GiB, 10GB.
type byteSize int64

var byteUnits = []struct {
	suffix string
	n      int64
}{ // longest suffixes first, so "MiB" is not read as "B"
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
	{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12},
	{"b", 1},
}

func (b byteSize) String() string {
	for _, u := range []struct {
		suffix string
		n      int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if b != 0 && int64(b)%u.n == 0 {
			return strconv.FormatInt(int64(b)/u.n, 10) + u.suffix
		}
	}
	return strconv.FormatInt(int64(b), 10)
}

func (b *byteSize) Set(s string) error {
	v := strings.ToLower(strings.TrimSpace(s))
	mult := int64(1)
	for _, u := range byteUnits {
		if num, ok := strings.CutSuffix(v, u.suffix); ok {
			v, mult = strings.TrimSpace(num), u.n
			break
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return fmt.Errorf("want a size such as 256MiB, 1GiB or 0, not %q", s)
	}
	if n > (1<<63-1)/mult {
		return fmt.Errorf("%q is too large", s)
	}
	*b = byteSize(n * mult)
	return nil
}
