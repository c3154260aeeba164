package metadata

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ringmq/ringmq/internal/logtest"
	"github.com/stretchr/testify/require"
)

func TestWriteConfigFileKeepsPreviousAsBak(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config", "x.json")
	require.NoError(t, WriteConfigFile(path, []byte(`{"v":1}`)))
	_, err := os.Stat(path + ".bak")
	require.ErrorIs(t, err, os.ErrNotExist, "no .bak after the first write")

	require.NoError(t, WriteConfigFile(path, []byte(`{"v":2}`)))
	require.NoError(t, WriteConfigFile(path, []byte(`{"v":3}`)))
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, `{"v":3}`, string(got))
	bak, err := os.ReadFile(path + ".bak")
	require.NoError(t, err)
	require.Equal(t, `{"v":2}`, string(bak))

	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	require.ElementsMatch(t, []string{"x.json", "x.json.bak"}, names, "no temp files left behind")
}

func decodeV(dst *int) func([]byte) error {
	return func(data []byte) error {
		var v struct{ V *int }
		if err := json.Unmarshal(data, &v); err != nil {
			return err
		}
		if v.V == nil {
			return errors.New("no v")
		}
		*dst = *v.V
		return nil
	}
}

func TestLoadConfigFileFallsBackToBak(t *testing.T) {
	cases := []struct {
		name     string
		main     *string // nil: absent
		bak      *string
		wantV    int
		wantFrom string // "main", "bak", "" (fresh)
		wantErr  bool
	}{
		{name: "neither", wantFrom: ""},
		{name: "main ok", main: new(`{"V":1}`), bak: new(`{"V":2}`), wantV: 1, wantFrom: "main"},
		{name: "main missing", bak: new(`{"V":2}`), wantV: 2, wantFrom: "bak"},
		{name: "main empty", main: new(""), bak: new(`{"V":2}`), wantV: 2, wantFrom: "bak"},
		{name: "main blank", main: new(" \n"), bak: new(`{"V":2}`), wantV: 2, wantFrom: "bak"},
		{name: "main damaged", main: new(`{"V":1`), bak: new(`{"V":2}`), wantV: 2, wantFrom: "bak"},
		{name: "main empty, no bak", main: new(""), wantFrom: ""},
		{name: "main damaged, no bak", main: new(`{"V":`), wantErr: true},
		{name: "both damaged", main: new(`x`), bak: new(`y`), wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "f.json")
			if tc.main != nil {
				require.NoError(t, os.WriteFile(path, []byte(*tc.main), 0o644))
			}
			if tc.bak != nil {
				require.NoError(t, os.WriteFile(path+".bak", []byte(*tc.bak), 0o644))
			}
			v := -1
			from, err := LoadConfigFile(path, decodeV(&v), logtest.Discard())
			if tc.wantErr {
				require.ErrorIs(t, err, ErrConfigFile)
				require.Contains(t, err.Error(), path)
				return
			}
			require.NoError(t, err)
			switch tc.wantFrom {
			case "":
				require.Equal(t, "", from)
				require.Equal(t, -1, v)
			case "main":
				require.Equal(t, path, from)
				require.Equal(t, tc.wantV, v)
			case "bak":
				require.Equal(t, path+".bak", from)
				require.Equal(t, tc.wantV, v)
			}
		})
	}
}

func TestConfigFilePersistFailureStaysDirty(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "blocker")
	require.NoError(t, os.WriteFile(blocker, nil, 0o644))
	// The parent "directory" is a file: every write fails.
	f := newConfigFile(filepath.Join(blocker, "x.json"), func() ([]byte, error) { return []byte("{}"), nil }, logtest.Discard())
	f.markDirty()
	require.ErrorIs(t, f.persistIfDirty(), ErrConfigFile)
	require.True(t, f.dirty.Load(), "a failed write stays pending")

	ok := newConfigFile(filepath.Join(dir, "ok.json"), func() ([]byte, error) { return []byte("{}"), nil }, logtest.Discard())
	require.NoError(t, ok.persistIfDirty())
	_, err := os.Stat(ok.path)
	require.ErrorIs(t, err, os.ErrNotExist, "nothing written while clean")
	ok.markDirty()
	require.NoError(t, ok.persistIfDirty())
	require.False(t, ok.dirty.Load())
	got, err := os.ReadFile(ok.path)
	require.NoError(t, err)
	require.Equal(t, "{}", string(got))
}
