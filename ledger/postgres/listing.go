package postgres

import (
	"context"
	"strconv"
)

// readPage reads one page of table's rows matching cond (with args):
// how many match, then the page newest first (by id), each row read by
// scan from columns.
func readPage[T any](ctx context.Context, db *DB, table, columns, cond string, args []any, size, offset int64,
	scan func(interface{ Scan(...any) error }) (*T, error)) (total int64, items []T, err error) {
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM `+table+` WHERE `+cond, args...).Scan(&total); err != nil {
		return 0, nil, err
	}
	n := len(args)
	rows, err := db.QueryContext(ctx, `SELECT `+columns+` FROM `+table+` WHERE `+cond+`
		ORDER BY id DESC LIMIT $`+strconv.Itoa(n+1)+` OFFSET $`+strconv.Itoa(n+2), append(args, size, offset)...)
	if err != nil {
		return 0, nil, err
	}
	defer rows.Close()
	items = []T{}
	for rows.Next() {
		it, err := scan(rows)
		if err != nil {
			return 0, nil, err
		}
		items = append(items, *it)
	}
	return total, items, rows.Err()
}
